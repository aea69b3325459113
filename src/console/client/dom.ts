/**
 * The few browser interfaces the console uses, declared here: the project compiles without the DOM library
 * (adding it would change the types of fetch and Blob for the server code), so the client names what it needs.
 * Nothing here exists at run time except `browser`, the window itself.
 */
export interface Ev {
  preventDefault(): void;
}
export interface MessageEv {
  data: string;
}
export interface El {
  textContent: string | null;
  className: string;
  hidden: boolean;
  append(...nodes: (El | string)[]): void;
  replaceChildren(...nodes: (El | string)[]): void;
  remove(): void;
  setAttribute(name: string, value: string): void;
  addEventListener(type: string, listener: (ev: Ev) => void): void;
  focus(): void;
}
export interface InputEl extends El {
  value: string;
  disabled: boolean;
  placeholder: string;
}
export interface ButtonEl extends El {
  disabled: boolean;
}
export interface CheckEl extends InputEl {
  checked: boolean;
}
export interface ImgEl extends El {
  src: string;
}
export interface DialogEl extends El {
  returnValue: string;
  showModal(): void;
}
export interface EventSourceLike {
  readonly readyState: number;
  onerror: (() => void) | null;
  addEventListener(type: string, listener: (ev: MessageEv) => void): void;
  close(): void;
}
interface Browser {
  document: {
    getElementById(id: string): El | null;
    createElement(tag: string): El;
  };
  EventSource: { new (url: string): EventSourceLike; readonly CLOSED: number };
  setInterval(fn: () => void, ms: number): number;
  clearInterval(handle: number): void;
  setTimeout(fn: () => void, ms: number): number;
  clearTimeout(handle: number): void;
}

export const browser = globalThis as unknown as Browser;

/** The element with this id (the page has it: a missing one is a bug in page.ts). */
export function byId<T extends El = El>(id: string): T {
  const el = browser.document.getElementById(id);
  if (!el) throw new Error(`console page has no #${id}`);
  return el as T;
}

/** A new element with a class and children. */
export function h(tag: string, className = '', ...children: (El | string)[]): El {
  const el = browser.document.createElement(tag);
  if (className) el.className = className;
  el.append(...children);
  return el;
}

/** A button (type=button) with a class that runs `onClick`. */
export function button(text: string, className: string, onClick: () => void): ButtonEl {
  const b = h('button', className, text) as ButtonEl;
  b.setAttribute('type', 'button');
  b.addEventListener('click', onClick);
  return b;
}

/** Run `run` when the form with this id is submitted (the page does not navigate). */
export function onSubmit(id: string, run: () => Promise<void>): void {
  byId(id).addEventListener('submit', (ev) => {
    ev.preventDefault();
    void run();
  });
}

/** A local date and time for a timestamp of the API (ISO), or a dash. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** The local time of day of a timestamp of the API (ISO), or a dash. */
export function timeOf(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString();
}

/** Show the panel with this id, titled with the instance's name (its `<id>-name` element). */
export function showPanel(id: string, name: string): void {
  byId(id).hidden = false;
  byId(`${id}-name`).textContent = name;
}

/** How often an open panel reads its data again. */
const REFRESH_MS = 2_000;

/** `refresh` run at start and then every 2 s until stopped: a panel's data while the panel is open. */
export interface Refresher {
  start(): void;
  stop(): void;
  running(): boolean;
}

export function refresher(refresh: () => Promise<void>): Refresher {
  let handle: number | null = null;
  const stop = () => {
    if (handle !== null) browser.clearInterval(handle);
    handle = null;
  };
  return {
    start() {
      stop();
      void refresh();
      handle = browser.setInterval(() => void refresh(), REFRESH_MS);
    },
    stop,
    running: () => handle !== null,
  };
}

/** The instance a panel (queue, webhook, diagrams) shows. */
export interface PanelTarget {
  id: string;
  name: string;
}
