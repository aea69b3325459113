/**
 * What both load generators (load-worker.ts, raw-load-worker.ts) keep of a run: the next request's body and
 * key, each answer's latency or failure, the first failed answer's text, and the result with percentiles and
 * the generator's own CPU per request.
 */
import type { LoadResult, LoadSpec } from './load.js';

export class LoadTally {
  private readonly latencies: number[] = [];
  private errors = 0;
  private readonly failures: Record<string, number> = {};
  private sample: string | undefined;
  private n = 0;
  private readonly ok: ReadonlySet<number>;
  /** when the run ends (performance.now()) */
  readonly end: number;

  constructor(private readonly spec: LoadSpec) {
    this.ok = new Set(spec.okStatus ?? []);
    this.end = performance.now() + spec.durationMs;
  }

  /** The next request's body (`{{n}}` replaced by its number) and bearer key (`keys` in turn). */
  next(): { body: string | undefined; key: string | undefined } {
    const i = this.n++;
    const { keys } = this.spec;
    return { body: this.spec.body?.replaceAll('{{n}}', String(i)), key: keys && keys.length > 0 ? keys[i % keys.length] : undefined };
  }

  /** A status counted as success: one of `onlyStatus` when given, else 2xx or one of `okStatus`. */
  isOk(status: number): boolean {
    if (this.spec.onlyStatus) return this.spec.onlyStatus.includes(status);
    return (status >= 200 && status < 300) || this.ok.has(status);
  }

  answered(ms: number): void {
    this.latencies.push(ms);
  }

  fail(what: string): void {
    this.errors++;
    this.failures[what] = (this.failures[what] ?? 0) + 1;
  }

  /** Whether the first failed answer's text is still wanted. */
  wantsSample(): boolean {
    return this.sample === undefined;
  }

  keepSample(text: string): void {
    this.sample ??= text;
  }

  /** Run `concurrency` loops of `loop` and answer the result. */
  async run(loop: () => Promise<void>): Promise<LoadResult> {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await Promise.all(Array.from({ length: this.spec.concurrency }, loop));
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const lat = this.latencies.sort((a, b) => a - b);
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? 0;
    return {
      requests: lat.length, errors: this.errors, failures: this.failures, ...(this.sample ? { sample: this.sample } : {}),
      rps: lat.length / elapsed, p50: pct(0.5), p99: pct(0.99), clientCpuUs: (cpu.user + cpu.system) / Math.max(1, lat.length + this.errors),
    };
  }
}
