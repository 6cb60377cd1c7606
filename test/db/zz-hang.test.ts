import { after } from "node:test";
import "./timeouts.test.ts";
after(() => { const t = setInterval(() => { console.error("ACTIVE", JSON.stringify(process.getActiveResourcesInfo())); }, 10000); t.unref(); });
