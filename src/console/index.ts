/** The operator console: its routes, its sign-in sessions and the admin guard that accepts them. */
export { consoleRouter, consoleApiRouter, consoleBundle, type ConsoleDeps, type ConsoleSnapshot } from './router.js';
export { ConsoleSessions, CONSOLE_COOKIE, CONSOLE_SESSION_TTL_MS } from './sessions.js';
export { requireAdminOrConsole } from './auth.js';
