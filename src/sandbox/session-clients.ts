/**
 * Who may use a sandbox session and who hears its events (docs/sandbox.md, "Takeover"). Every driver object
 * attached to a session is a client with an id; the session belongs to the client that initialized it last
 * (SandboxSession makes the takeover: it ends the previous owner's run and tells it so). A stale client's
 * calls are refused NOT_CONNECTED, provably not sent, and the session's events go to the owner's listeners
 * only. A listener or call without a client id is the network's own (tests, tools): never refused, never an
 * owner, and it hears every event.
 */
import { DriverError } from '../drivers/contract.js';
import type { SandboxEvent, SandboxEventListener } from '../drivers/sandbox/api.js';

/** A listener and who holds it: `client` undefined for the network's own; `stream` for a remote event stream. */
interface Attachment {
  client: string | undefined;
  stream: boolean;
}

export class SessionClients {
  private readonly listeners = new Map<SandboxEventListener, Attachment>();
  /** the client that initialized the session last; null until a client did */
  private ownerId: string | null = null;

  /** `ownerGone`: the owner's last event stream closed (its process is gone). */
  constructor(private readonly ownerGone: () => void) {}

  /** The client that initialized the session last (null until one did). */
  get owner(): string | null {
    return this.ownerId;
  }

  /** `client` owns the session from now on; answers the previous owner (null: none). */
  setOwner(client: string): string | null {
    const previous = this.ownerId;
    this.ownerId = client;
    return previous;
  }

  /**
   * Receive the session's events: with a client id, only while that client owns the session (or while
   * nobody does); without one (the network's own observers), all of them.
   */
  subscribe(listener: SandboxEventListener, client?: string): () => void {
    const wrapped: SandboxEventListener = (e) => listener(e);
    this.listeners.set(wrapped, { client, stream: false });
    return () => void this.listeners.delete(wrapped);
  }

  /**
   * A remote client's event stream. When the owner's last stream closes, its process is gone and the
   * session stops, as a browser dies with its process; a stale client's stream closing changes nothing.
   */
  attachStream(client: string, listener: SandboxEventListener): () => void {
    const wrapped: SandboxEventListener = (e) => listener(e);
    this.listeners.set(wrapped, { client, stream: true });
    return () => {
      if (!this.listeners.delete(wrapped)) return;
      if (client === this.ownerId && this.streamsOf(client) === 0) this.ownerGone();
    };
  }

  /** How many event streams `client` has open on this session. */
  streamsOf(client: string): number {
    let n = 0;
    for (const a of this.listeners.values()) if (a.stream && a.client === client) n++;
    return n;
  }

  /** An event of the session: to the owner's listeners and the network's own observers. */
  emit(event: SandboxEvent): void {
    for (const [l, a] of [...this.listeners]) {
      if (a.client === undefined || this.ownerId === null || a.client === this.ownerId) l(event);
    }
  }

  /** An event for one client's listeners only (a replaced owner hears that it lost the session). */
  emitTo(client: string, event: SandboxEvent): void {
    for (const [l, a] of [...this.listeners]) if (a.client === client) l(event);
  }

  /** A client that no longer owns the session (replaced by another one). */
  isStale(client: string | undefined): boolean {
    return client !== undefined && this.ownerId !== null && client !== this.ownerId;
  }

  /** Refuse a call from a stale client. */
  requireOwner(client: string | undefined): void {
    if (this.isStale(client)) {
      throw new DriverError('the session was taken over by another client', 'NOT_CONNECTED', true);
    }
  }
}
