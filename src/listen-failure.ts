/**
 * Why a server could not listen, in the words of the setting a person changes: the gateway's PORT and HOST
 * (src/run-main.ts startFailure) and `mgw sandbox`'s --port and --host (src/cli/sandbox.ts), one wording for both.
 * Found from the outside: bare node errors ("listen EADDRINUSE …", "getaddrinfo ENOTFOUND …") that named neither.
 */

/** The settings a listen is made with, named as a person sets them (`PORT`, `--port`). */
export interface ListenSettings {
  portName: string;
  port: number;
  hostName: string;
  host: string;
}

/** The failure of a listen (`syscall` listen), or null when `err` is none. */
export function listenFailure(err: { code?: unknown; syscall?: unknown }, message: string, s: ListenSettings): string | null {
  if (err.syscall !== 'listen') return null;
  // the host is no address of this machine (found from the outside: blamed on PORT, which was 0)
  if (err.code === 'EADDRNOTAVAIL') return `${s.hostName} ${s.host} is not an address of this machine (EADDRNOTAVAIL): set ${s.hostName} to one of its addresses (0.0.0.0: all of them)`;
  const why = err.code === 'EADDRINUSE' ? 'is in use' : err.code === 'EACCES' ? 'needs privileges' : `cannot be used (${message})`;
  return `${s.portName} ${s.port} on ${s.hostName} ${s.host} ${why}: set ${s.portName} to a free port (0 for any free port)`;
}

/** The host named no address (a `getaddrinfo` failure of the listen's own host). */
export const unresolvedHost = (code: unknown, s: Pick<ListenSettings, 'hostName' | 'host'>): string =>
  `${s.hostName} ${s.host} does not resolve to an address (${String(code)}): set ${s.hostName} to an address of this machine (0.0.0.0: all of them)`;
