/**
 * The structure of the instance and job machines as JSON for the console's state diagrams
 * (`GET /console/machines`): walked from each machine's own `.root` state nodes, as scripts/diagrams.ts walks
 * them for docs/machines/, so the console draws exactly what the machines define. Nested and parallel states,
 * the initial child, every transition with its event, guard and targets (eventless ones as `always`, delayed
 * ones as `after <delay>`). Node ids are dotted paths without the machine id (`active.lifecycle.running`),
 * the form the client turns a live state value into.
 */
import type { AnyStateMachine } from 'xstate';
import { instanceMachine } from '../../machines/instance.machine.js';
import { jobMachine } from '../../machines/job.machine.js';
import { eventLabel, guardLabel } from '../../machines/labels.js';

export interface MachineTransition {
  /** the event as written in the machine, or `always`, `after <delay>`, `done <actor>`, `error <actor>` */
  event: string;
  guard: string | null;
  /** target node ids; empty: handled in place (actions only) */
  targets: string[];
}

export interface MachineNode {
  /** dotted path from the root ('' for the root) */
  id: string;
  key: string;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** key of the initial child of a compound state */
  initial: string | null;
  description: string | null;
  tags: string[];
  transitions: MachineTransition[];
  children: MachineNode[];
}

export interface MachineGraph {
  id: string;
  root: MachineNode;
}

type StateNode = AnyStateMachine['root'];
type Transition = ReturnType<StateNode['transitions']['get']> extends (infer T)[] | undefined ? T : never;

const pathOf = (n: StateNode) => n.path.join('.');

function walk(node: StateNode): MachineNode {
  const transitions = [...[...node.transitions.values()].flat(), ...(node.always ?? [])].map((t: Transition) => ({
    event: eventLabel(t),
    guard: t.guard ? guardLabel(t.guard) : null,
    targets: (t.target ?? []).map(pathOf),
  }));
  const description = typeof node.description === 'string' ? node.description : null;
  return {
    id: pathOf(node),
    key: node.key,
    type: node.type,
    initial: node.type === 'compound' ? (node.initial?.target[0]?.key ?? null) : null,
    description,
    tags: [...node.tags],
    transitions,
    children: Object.values(node.states).map(walk),
  };
}

export function machineGraph(machine: AnyStateMachine): MachineGraph {
  return { id: machine.id, root: walk(machine.root) };
}

let cached: { instance: MachineGraph; job: MachineGraph } | null = null;

/** The two machines the console draws (built once: they do not change while the process runs). */
export function consoleMachines(): { instance: MachineGraph; job: MachineGraph } {
  cached ??= { instance: machineGraph(instanceMachine), job: machineGraph(jobMachine) };
  return cached;
}
