// A delivery loop in a process of its own, as `npm start` and `npm run worker` run it, with the
// tests' loopback Outbound: for the kill -9 test. Prints "delivering" once its loop listens.
import process from "node:process";
import { readConfig } from "../../src/config.ts";
import { openDatabase } from "../../src/db/open.ts";
import { createDeliverer } from "../../src/webhooks/deliver.ts";
import { loopbackOutbound } from "./outbound.ts";

const config = readConfig(process.env);
const db = await openDatabase({ databaseUrl: config.databaseUrl, max: 2 });
const loop = createDeliverer({ db, config, outbound: loopbackOutbound(), now: () => new Date(), log: (line) => console.error(line), idleMs: 100 });
await loop.start();
console.log(`delivering as ${loop.owner}`);
