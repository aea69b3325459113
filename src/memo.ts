/** Small caches for reads that may be a moment old. */

/** `load(key)` remembered for `ms` of real time per key (a hit costs no query). */
export function cachedFor<T>(ms: number, load: (key: string) => Promise<T>): ((key: string) => Promise<T>) & { clear(): void } {
  const cache = new Map<string, { at: number; value: Promise<T> }>();
  const read = (key: string): Promise<T> => {
    const now = Date.now();
    const hit = cache.get(key);
    if (hit && now - hit.at < ms) return hit.value;
    if (cache.size > 10_000) cache.clear();
    const value = load(key);
    cache.set(key, { at: now, value });
    value.catch(() => cache.delete(key));
    return value;
  };
  return Object.assign(read, { clear: () => cache.clear() });
}

/**
 * `load(key)` answered from memory whenever a value is known, refreshed in the background once it is older
 * than `ms` of real time (one refresh at a time per key); a failed refresh keeps the last value. Only the
 * first read of a key waits for `load`. For figures that may be a moment old and must not make a request
 * wait on the store: a slow or unreachable PostgreSQL then delays nothing but the figure's next refresh.
 */
export function staleWhileRevalidate<T>(ms: number, load: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const cache = new Map<string, { at: number; value: T; refreshing: boolean }>();
  const first = new Map<string, Promise<T>>();
  const refresh = (key: string, entry: { at: number; value: T; refreshing: boolean }) => {
    entry.refreshing = true;
    load(key).then(
      (value) => cache.set(key, { at: Date.now(), value, refreshing: false }),
      () => (entry.refreshing = false),
    );
  };
  return (key) => {
    const hit = cache.get(key);
    if (hit) {
      if (!hit.refreshing && Date.now() - hit.at >= ms) refresh(key, hit);
      return Promise.resolve(hit.value);
    }
    const waiting = first.get(key);
    if (waiting) return waiting;
    if (cache.size > 10_000) cache.clear();
    const value = load(key).then((v) => (cache.set(key, { at: Date.now(), value: v, refreshing: false }), v));
    first.set(key, value);
    void value.then(() => first.delete(key), () => first.delete(key));
    return value;
  };
}
