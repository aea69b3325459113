/**
 * The demo instance of a zero-configuration start (DEMO_INSTANCE): made on an empty store, linked on the sandbox
 * network as DEMO_PHONE, its key shown once in the start's banner. A start that failed before its banner made
 * them without showing them (DATA_DIR/unshown.json, src/bootstrap.ts Unshown): a later start shows them again,
 * with a new key (the one made before is stored hashed only), unless a key was made elsewhere since.
 */
import type { Logger } from './log.js';
import type { Unshown } from './bootstrap.js';
import { withTransaction, type Pool } from './store/pool.js';
import { activeKeyIds, createInstance, getInstance, listInstances, rotateKey, type Instance } from './store/instances.js';

export const DEMO_PHONE = '4915550100001';

/**
 * The demo to show: its key and, once the start knows, the number it is linked as and the node that runs it
 * (null: none holds it yet; `phoneNumber` null: not linked, on another node or on this one, `notLinked` then
 * saying why where this node runs it).
 */
export interface Demo {
  instance: Instance;
  apiKey: string;
  phoneNumber: string | null;
  node: string | null;
  /** this node runs it and it was not linked by the banner: its session's last error, or its status */
  notLinked?: string;
}

/** How long a start waits for the demo this node links before its banner says it is not linked (real time). */
export const DEMO_LINK_WAIT_MS = 5_000;

/**
 * The demo this start shows (null: none) and the instance it links on its sandbox (null: none), before any
 * instance's session starts. `create`: DEMO_INSTANCE, a demo is made on an empty store.
 */
export async function prepareDemo(deps: { pool: Pool; unshown: Unshown; log: Logger; create: boolean }): Promise<{ demo: Demo | null; linkDemo: string | null }> {
  const { pool, unshown, log } = deps;
  if (unshown.demoInstanceId !== null) {
    const id = unshown.demoInstanceId;
    const made = await getInstance(pool, id);
    const madeKeys = unshown.demoKeyIds;
    if (!made) unshown.dropDemo();
    else if (madeKeys.length > 0) {
      // its key was never shown: a new one, but only while the keys made here are its only active ones. Found
      // by the outside probe: with a shared database another node may run the demo meanwhile and an operator
      // may have rotated its key there and use it; replacing that key broke its clients without a word
      const apiKey = await withTransaction(pool, async (c) => {
        const active = await activeKeyIds(c, id, true);
        if (active.length === 0 || active.some((k) => !madeKeys.includes(k))) return null;
        const key = await rotateKey(c, made);
        // before the COMMIT, naming the keys before and after it: a start that ends between the two shows it again
        unshown.set({ demoKeyIds: [...active, ...(await activeKeyIds(c, id))] });
        return key;
      });
      if (apiKey !== null) return { demo: { instance: made, apiKey, phoneNumber: null, node: null }, linkDemo: id };
      log.warn({ instanceId: id }, 'the demo instance an earlier start made and did not show has a key made elsewhere since (rotated by an operator or through another node): its key is not replaced and not shown here');
      unshown.dropDemo();
    } else if (made.phoneNumber === null) {
      // shown, not linked yet (a kill right after the banner, before its session first started): link it now
      return { demo: null, linkDemo: id };
    } else unshown.dropDemo();
  }
  if (!deps.create || (await listInstances(pool)).length > 0) return { demo: null, linkDemo: null };
  const created = await withTransaction(pool, async (c) => {
    const made = await createInstance(c, { name: 'demo', driver: 'sandbox', settings: { quietHours: null } });
    // in its transaction: there is no demo instance that a later start would not know to show
    unshown.set({ demoInstanceId: made.instance.id, demoKeyIds: await activeKeyIds(c, made.instance.id) });
    return made;
  });
  return { demo: { ...created, phoneNumber: null, node: null }, linkDemo: created.instance.id };
}
