/**
 * What the HTTP layer reads of @koa/router's layers (a route, or a middleware mounted with `use`), which its types
 * do not export: one view for the route table, the dispatch (src/http/dispatch.ts) and the target checks
 * (src/http/target.ts).
 */
import type Router from '@koa/router';
import type { Middleware } from 'koa';

export interface LayerLike {
  path: string | RegExp;
  name?: string | null;
  methods: string[];
  stack: Middleware[];
  /** the route's parameters, in the order of their captures */
  paramNames: readonly { name: string }[];
  match(path: string): boolean;
  /** the raw (not decoded) text of each parameter in `path` */
  captures(path: string): string[];
  /** `existing` with the decoded parameters of `captures` over it */
  params(path: string, captures: string[], existing?: Record<string, string>): Record<string, string>;
}

export const layersOf = (router: Router): LayerLike[] => router.stack as unknown as LayerLike[];
