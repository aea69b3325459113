/**
 * A DATA_DIR that held an embedded database does not quietly get an empty one (src/store/embedded.ts): the marker
 * beside pg/ is written once pg/ holds a database, a start that finds it without one refuses, and a running
 * gateway is told within a look when pg/ is removed or replaced. Real directories in a temporary one; the database
 * is stood for by PostgreSQL's PG_VERSION file, the one thing these functions read of it
 * (test/e2e/embedded-gone.test.ts runs a real embedded database).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkEmbeddedDir, EMBEDDED_MARKER, EmbeddedDatabaseGone, markEmbeddedDir, socketDirFor, watchEmbeddedDir } from '../../src/store/embedded.js';
import { MAX_SOCKET_PATH } from '../../src/socket-path.js';
import { literally } from '../helpers/regexp.js';

async function dataDir(t: { after(f: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-embedded-dir-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function database(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'pg'), { recursive: true });
  await writeFile(path.join(dir, 'pg', 'PG_VERSION'), '16\n');
}

/** Resolves with the first message `watchEmbeddedDir` tells, or null after `ms` (it returns at the first) of looks every 5 ms. */
async function toldWithin(pgDir: string, change: () => Promise<void>, ms = 3_000): Promise<string | null> {
  let told: string | null = null;
  const stop = await watchEmbeddedDir(pgDir, (m) => (told ??= m), 5);
  try {
    await change();
    for (let waited = 0; told === null && waited < ms; waited += 5) await new Promise((r) => setTimeout(r, 5));
    return told;
  } finally {
    stop();
  }
}

test('a fresh DATA_DIR starts; the marker is written once pg/ holds a database, and names when', async (t) => {
  const dir = await dataDir(t);
  await checkEmbeddedDir(dir);
  await markEmbeddedDir(dir);
  assert.equal(existsSync(path.join(dir, EMBEDDED_MARKER)), false, 'no database yet, no marker');
  await database(dir);
  await markEmbeddedDir(dir, new Date('2026-12-01T07:00:00Z'));
  const marker = JSON.parse(await readFile(path.join(dir, EMBEDDED_MARKER), 'utf8')) as { since: string };
  assert.equal(marker.since, '2026-12-01T07:00:00.000Z');
  await markEmbeddedDir(dir, new Date('2027-01-01T00:00:00Z'));
  assert.equal((JSON.parse(await readFile(path.join(dir, EMBEDDED_MARKER), 'utf8')) as { since: string }).since, '2026-12-01T07:00:00.000Z', 'a later start keeps the first date');
  await checkEmbeddedDir(dir);
});

test('an older version\'s DATA_DIR (a database, no marker) starts and is marked', async (t) => {
  const dir = await dataDir(t);
  await database(dir);
  await checkEmbeddedDir(dir);
  await markEmbeddedDir(dir);
  assert.ok(existsSync(path.join(dir, EMBEDDED_MARKER)));
});

for (const [what, remove] of [
  ['pg/ removed', (dir: string) => rm(path.join(dir, 'pg'), { recursive: true })],
  ['pg/ emptied', async (dir: string) => (await rm(path.join(dir, 'pg'), { recursive: true }), await mkdir(path.join(dir, 'pg')))],
  ['PG_VERSION alone removed', (dir: string) => rm(path.join(dir, 'pg', 'PG_VERSION'))],
] as const) {
  test(`a marked DATA_DIR with ${what}: the start refuses, saying how to go on; without the marker it starts`, async (t) => {
    const dir = await dataDir(t);
    await database(dir);
    await markEmbeddedDir(dir, new Date('2026-12-01T07:00:00Z'));
    await remove(dir);
    await assert.rejects(checkEmbeddedDir(dir), (err: unknown) => {
      assert.ok(err instanceof EmbeddedDatabaseGone);
      assert.match(err.message, /held an embedded database \(since 2026-12-01T07:00:00\.000Z\)/);
      assert.ok(err.message.includes(`restore ${path.join(dir, 'pg')} from a backup`));
      assert.ok(err.message.includes(`or remove ${path.join(dir, EMBEDDED_MARKER)} to start with an empty database`));
      return true;
    });
    await rm(path.join(dir, EMBEDDED_MARKER));
    await checkEmbeddedDir(dir);
  });
}

test('a marked DATA_DIR whose pg/ lost its PG_VERSION but not the rest: refused as damaged, and removing the marker is said to start over what is left', async (t) => {
  const dir = await dataDir(t);
  await database(dir);
  await mkdir(path.join(dir, 'pg', 'base'));
  await mkdir(path.join(dir, 'pg', 'global'));
  await markEmbeddedDir(dir, new Date('2026-12-01T07:00:00Z'));
  await rm(path.join(dir, 'pg', 'PG_VERSION'));
  await assert.rejects(checkEmbeddedDir(dir), (err: unknown) => {
    assert.ok(err instanceof EmbeddedDatabaseGone);
    assert.ok(err.message.includes(`${path.join(dir, 'pg')} is damaged: PostgreSQL's PG_VERSION is gone, 2 other entries are left (base, global): restore ${path.join(dir, 'pg')} from a backup; removing ${path.join(dir, EMBEDDED_MARKER)} would start an empty database over what is left`), err.message);
    return true;
  });
});

test('a pg/ this user may not read is not a database gone: the start fails with that error', { skip: process.getuid?.() === 0 && 'root reads a directory of mode 000' }, async (t) => {
  const dir = await dataDir(t);
  await database(dir);
  await markEmbeddedDir(dir);
  await chmod(path.join(dir, 'pg'), 0o000);
  try {
    await assert.rejects(checkEmbeddedDir(dir), (err: unknown) => !(err instanceof EmbeddedDatabaseGone) && (err as NodeJS.ErrnoException).code === 'EACCES');
  } finally {
    await chmod(path.join(dir, 'pg'), 0o700);
  }
});

test('while running, a marker removed is written again (a later loss is then still refused at the start)', async (t) => {
  const dir = await dataDir(t);
  await database(dir);
  await markEmbeddedDir(dir);
  const stop = await watchEmbeddedDir(path.join(dir, 'pg'), () => undefined, 5, dir);
  try {
    await rm(path.join(dir, EMBEDDED_MARKER));
    for (let i = 0; i < 600 && !existsSync(path.join(dir, EMBEDDED_MARKER)); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(existsSync(path.join(dir, EMBEDDED_MARKER)));
  } finally {
    stop();
  }
});

test('a marker that is not JSON still counts: the start refuses', async (t) => {
  const dir = await dataDir(t);
  await writeFile(path.join(dir, EMBEDDED_MARKER), 'garbage');
  await assert.rejects(checkEmbeddedDir(dir), /since an unknown date/);
});

test('while running: pg/ removed, emptied or replaced is told once; left alone, or written to, nothing is told', async (t) => {
  const dir = await dataDir(t);
  const pgDir = path.join(dir, 'pg');
  await database(dir);
  assert.equal(await toldWithin(pgDir, () => writeFile(path.join(pgDir, 'new-wal-segment'), 'x'), 60), null, 'files come and go in a running database');
  const removed = await toldWithin(pgDir, () => rm(pgDir, { recursive: true }));
  // rm -rf takes the files before their directory: a look in between names the file it found gone first
  const at = literally(pgDir);
  assert.match(removed ?? '', new RegExp(`^the embedded database's (directory ${at}|${at}/\\S+) was removed \\(or moved away\\) under the running gateway: nothing it accepts now could be kept$`));
  await database(dir);
  assert.match((await toldWithin(pgDir, () => rm(path.join(pgDir, 'PG_VERSION')))) ?? '', /was removed/);
  await database(dir);
  // a copy put in its place (a restore under the running gateway): another directory, though it holds a database
  const replaced = await toldWithin(pgDir, async () => {
    await mkdir(path.join(dir, 'copy'));
    await writeFile(path.join(dir, 'copy', 'PG_VERSION'), '16\n');
    await rename(pgDir, path.join(dir, 'old'));
    await rename(path.join(dir, 'copy'), pgDir);
  });
  // (two renames: a look between them sees it removed)
  assert.match(replaced ?? '', /directory \S+ was (replaced|removed) under the running gateway/);
  // a part of it put there anew, in one step (a backup's files copied into the running pg/): replaced
  await mkdir(path.join(pgDir, 'base'));
  const fileReplaced = await toldWithin(pgDir, async () => {
    await writeFile(path.join(dir, 'PG_VERSION.copy'), '16\n');
    await rename(path.join(dir, 'PG_VERSION.copy'), path.join(pgDir, 'PG_VERSION'));
  });
  assert.equal(fileReplaced, `the embedded database's ${path.join(pgDir, 'PG_VERSION')} was replaced under the running gateway: nothing it accepts now could be kept`);
  const partRemoved = await toldWithin(pgDir, () => rm(path.join(pgDir, 'base'), { recursive: true }));
  assert.equal(partRemoved, `the embedded database's ${path.join(pgDir, 'base')} was removed (or moved away) under the running gateway: nothing it accepts now could be kept`);
});

test('while running: a database\'s directory (base/<oid>) and the control file are watched too; the stop\'s last look tells what the last second did', async (t) => {
  const dir = await dataDir(t);
  const pgDir = path.join(dir, 'pg');
  await database(dir);
  await mkdir(path.join(pgDir, 'base', '5'), { recursive: true });
  await mkdir(path.join(pgDir, 'global'), { recursive: true });
  await writeFile(path.join(pgDir, 'global', 'pg_control'), 'control');
  assert.match((await toldWithin(pgDir, () => rm(path.join(pgDir, 'base', '5'), { recursive: true }))) ?? '', /base\/5 was removed \(or moved away\)/);
  await mkdir(path.join(pgDir, 'base', '5'));
  assert.match((await toldWithin(pgDir, () => rm(path.join(pgDir, 'global', 'pg_control')))) ?? '', /global\/pg_control was removed/);
  await writeFile(path.join(pgDir, 'global', 'pg_control'), 'control');
  // written in place (as PostgreSQL writes it): the same file, nothing told
  assert.equal(await toldWithin(pgDir, () => writeFile(path.join(pgDir, 'global', 'pg_control'), 'control, later'), 60), null);
  // a watch that looks once an hour: only the stop's last look can see it
  const told: string[] = [];
  const watch = await watchEmbeddedDir(pgDir, (m) => told.push(m), 3_600_000);
  await rm(pgDir, { recursive: true });
  assert.deepEqual(told, []);
  await watch.lookNow();
  assert.equal(told.length, 1);
  assert.match(told[0] ?? '', /directory \S+ was removed/);
});

test('a pg/ that is a symbolic link (PGlite does not follow one): the start says so, not that the database is damaged', async (t) => {
  const dir = await dataDir(t);
  await database(dir);
  await rename(path.join(dir, 'pg'), path.join(dir, 'pg.real'));
  await symlink(path.join(dir, 'pg.real'), path.join(dir, 'pg'));
  await assert.rejects(checkEmbeddedDir(dir), new RegExp(`^Error: ${literally(path.join(dir, 'pg'))} is a symbolic link, which the embedded PostgreSQL cannot follow: put the directory itself there`));
});

test('told once only, and nothing after the watch is stopped', async (t) => {
  const dir = await dataDir(t);
  const pgDir = path.join(dir, 'pg');
  await database(dir);
  const told: string[] = [];
  const stop = await watchEmbeddedDir(pgDir, (m) => told.push(m), 5);
  await rm(pgDir, { recursive: true });
  for (let i = 0; i < 600 && told.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(told.length, 1);
  stop();
  const later: string[] = [];
  await database(dir);
  const stop2 = await watchEmbeddedDir(pgDir, (m) => later.push(m), 5);
  stop2();
  await rm(pgDir, { recursive: true });
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(later, []);
});

test('the socket: in run/ where its path fits, else in a private directory of the temporary one, named by DATA_DIR, refused when not private', async (t) => {
  const dir = await dataDir(t);
  const run = path.join(dir, 'run');
  assert.equal(await socketDirFor(dir, run), run);
  const deep = path.join(dir, 'd'.repeat(Math.max(1, MAX_SOCKET_PATH - dir.length)));
  await mkdir(path.join(deep, 'run'), { recursive: true });
  const elsewhere = await socketDirFor(deep, path.join(deep, 'run'));
  t.after(() => rm(elsewhere, { recursive: true, force: true }));
  assert.equal(path.dirname(elsewhere), os.tmpdir());
  assert.match(path.basename(elsewhere), /^mgw-pg-[0-9a-f]{24}$/);
  assert.equal((await stat(elsewhere)).mode & 0o777, 0o700);
  assert.equal(await socketDirFor(deep, path.join(deep, 'run')), elsewhere, 'the same DATA_DIR, the same directory');
  // a deep symlink to it: the same DATA_DIR (named by its real path)
  const link = path.join(dir, 'l'.repeat(Math.max(1, MAX_SOCKET_PATH - dir.length)));
  await symlink(deep, link);
  assert.equal(await socketDirFor(link, path.join(link, 'run')), elsewhere);
  // another user's, or one others may enter: refused
  await chmod(elsewhere, 0o755);
  await assert.rejects(socketDirFor(deep, path.join(deep, 'run')), /is not a directory of this user's that only it may enter: remove it/);
  await rm(elsewhere, { recursive: true });
  await symlink(dir, elsewhere);
  await assert.rejects(socketDirFor(deep, path.join(deep, 'run')), /is not a directory of this user's/);
  await rm(elsewhere);
});
