import { startSandboxServer } from './src/http/sandbox-server.js';
try { await startSandboxServer({ port: 47391, host: '127.0.0.1', statePath: null }); } catch (e) { console.log(Object.keys(e as object), (e as {syscall?: string}).syscall, e instanceof Error); }
process.exit(0);
