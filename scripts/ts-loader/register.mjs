// `node --import ./scripts/ts-loader/register.mjs file.ts`: TypeScript run as `npm test` runs it (see hooks.mjs).
// What tsx does for `npm start`, without tsx's cost in every process: its own code (about half a second of CPU
// a process) and a transform cache looked up by content. scripts/run-tests.mjs compiles every file once for the
// run and hands the cache to each test file's process and to the gateways the tests start.
import { register } from 'node:module';

process.setSourceMapsEnabled(true);
register('./hooks.mjs', import.meta.url, { data: { cache: process.env.MGW_TS_CACHE ?? '' } });
