import { MOVES, type Move } from './moves.js';
import {
  ENDED_WITHOUT_OUTPUT,
  FINAL_STATES,
  ITEM_STATES,
  OPEN_STATES,
  REVIVABLE_STATES,
  UNANSWERED_STATES,
  WAITING_STATES,
} from './states.js';

const code = (words: readonly string[]) => (words.length ? words.map((w) => `\`${w}\``).join(', ') : '(new)');

/** The Mermaid diagram: one arrow for each change of state, labelled with every move that makes it. */
function diagram(): string[] {
  const edges = new Map<string, string[]>();
  for (const [name, move] of Object.entries(MOVES as Record<string, Move>))
    for (const from of move.from.length ? move.from : ['[*]'])
      for (const to of move.to) {
        if (from === to) continue;
        const edge = `${from} --> ${to}`;
        edges.set(edge, [...(edges.get(edge) ?? []), name]);
      }
  return [
    '```mermaid',
    'stateDiagram-v2',
    ...[...edges].map(([edge, names]) => `  ${edge}: ${names.join(', ')}`),
    '```',
  ];
}

/** docs/states.md: the item's states, their groups and every move with its guard, written from the machine's table. */
export function statesReferenceText(): string {
  const groups: [string, readonly string[], string][] = [
    ['open', OPEN_STATES, 'work remains, and a run takes it up on its own'],
    ['waiting on a person', WAITING_STATES, 'a decision on a gate moves it, nothing else does'],
    [
      'final',
      FINAL_STATES,
      "nothing more happens on its own: only a person's command (`retry`, a redo), or its output found gone, moves it",
    ],
    [
      'revivable',
      REVIVABLE_STATES,
      'ended for now; moved again on its own when what ended it is undone (an input made again, a rejection cleared)',
    ],
  ];
  const lines = [
    '# An item’s states and moves',
    '',
    'Generated from the machine’s table (`src/store/machine/moves.ts`) by `npm run schema`, and checked current by a',
    'test. Every change of an item’s state is one of these moves, made by the named function of `Lifecycle`',
    '(`src/store/lifecycle.ts`) in one transaction, guarded by the states it may leave and by what the guard says;',
    'no trigger moves an item. A property test drives random sequences of moves, decisions, redos and restarts',
    'against this table.',
    '',
    '## States',
    '',
    '| group | states | what it means |',
    '| --- | --- | --- |',
    ...groups.map(([name, states, what]) => `| ${name} | ${code(states)} | ${what} |`),
    '',
    `The groups hold every state once: ${code(ITEM_STATES)}. Sent and not yet answered with a job:`,
    `${code(UNANSWERED_STATES)}. Ended without an output (dependents cannot run; \`retry\` looks here):`,
    `${code(ENDED_WITHOUT_OUTPUT)}.`,
    '',
    '## The machine',
    '',
    ...diagram(),
    '',
    '## Moves',
    '',
    '| move | from | to | guard | made by | what it is |',
    '| --- | --- | --- | --- | --- | --- |',
    ...Object.entries(MOVES as Record<string, Move>).map(
      ([name, m]) =>
        `| ${name} | ${code(m.from)} | ${code(m.to)} | ${m.guard} | ${m.by
          .split(', ')
          .map((f) => `\`${f}\``)
          .join(', ')} | ${m.what} |`,
    ),
    '',
  ];
  return lines.join('\n');
}
