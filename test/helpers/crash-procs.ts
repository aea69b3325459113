/**
 * The processes of the crash checker: the gateway as a child process (`node --import tsx src/main.ts`) against
 * a database of its own and an external sandbox network, on one fixed loopback port so that clients find every
 * restarted gateway where the killed one was. Its output is kept (a bounded tail) to explain a crash.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

export interface GatewayEnv {
  port: number;
  dataDir: string;
  databaseUrl: string;
  sandboxUrl: string;
  adminToken: string;
}

export interface GatewayProcess {
  proc: ChildProcess;
  url: string;
  /** the last few kilobytes of its stdout and stderr */
  output(): string;
  /** resolves with the exit code or signal once the process is gone */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** true once the process ended although nobody killed it */
  crashed(): boolean;
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const TAIL_CHARS = 8_000;

/** A port that is free right now on the loopback interface. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Start a gateway process and wait until it listens (or fail with its output if it dies or takes too long). */
export async function startGatewayProcess(env: GatewayEnv, startTimeoutMs = 30_000): Promise<GatewayProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(env.port),
      HOST: '127.0.0.1',
      DATA_DIR: env.dataDir,
      DATABASE_URL: env.databaseUrl,
      SANDBOX: env.sandboxUrl,
      ADMIN_TOKEN: env.adminToken,
      DEMO_INSTANCE: 'false',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-TAIL_CHARS);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  let killed = false;
  let gone = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => {
      gone = true;
      resolve({ code, signal });
    });
  });
  const gp: GatewayProcess = {
    proc,
    url: `http://127.0.0.1:${env.port}`,
    output: () => out,
    exited,
    crashed: () => gone && !killed,
    async kill(signal) {
      killed = true;
      if (!gone) proc.kill(signal);
      return exited;
    },
  };
  const deadline = Date.now() + startTimeoutMs;
  while (!/listening on http/.test(out)) {
    if (gone) throw new Error(`the gateway exited while starting:\n${out}`);
    if (Date.now() > deadline) {
      await gp.kill('SIGKILL');
      throw new Error(`the gateway did not listen within ${startTimeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return gp;
}
