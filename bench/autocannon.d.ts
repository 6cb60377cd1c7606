// The part of autocannon's programmatic API that the bench's lookup cases use (bench/lookup.ts);
// the package ships no types.
declare module "autocannon" {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      /** Called before every request is built; returns the request to send. */
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request | null | undefined;
    }

    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      pipelining?: number;
      timeout?: number;
      title?: string;
      headers?: Record<string, string>;
      requests?: Request[];
      warmup?: { connections?: number; duration?: number };
    }

    /** Percentiles are p0_001 ... p99_999; latency in milliseconds, requests per second. */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
    }

    interface Result {
      title?: string;
      url: string;
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      resets: number;
      "2xx": number;
      statusCodeStats: Record<string, { count: number }>;
      latency: Histogram;
      requests: Histogram & { sent: number };
      throughput: Histogram;
    }

    interface Instance extends PromiseLike<Result> {
      stop(): void;
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
