import type * as z from 'zod';
import { closestTo } from './closest.js';
import { defaultsSchema, itemSchema, manifestSchema } from './schema.js';

/** Field names allowed at a path, for "did you mean" on unknown fields. */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  if (path.length === 0) return Object.keys(manifestSchema.shape);
  if (path[0] === 'defaults' && path.length === 1) return Object.keys(defaultsSchema.shape);
  if (path[0] === 'items' && path.length === 2) return Object.keys(itemSchema.shape);
  if (path[0] === 'output') return ['dir', 'name'];
  if (path[0] === 'budget') return ['maxCredits'];
  // An input given as a mapping: { from, approved }.
  return ['from', 'approved'];
}

export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value (null)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string')
    return `the text ${JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)}`;
  return `${typeof value === 'number' ? 'the number' : ''} ${String(value)}`.trim();
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = data;
  for (const seg of path)
    v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[seg] : undefined;
  return v;
}

const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
};

/** One zod issue as the user reads it: where (path) and what was expected versus found. */
export function explainIssue(issue: z.core.$ZodIssue, data: unknown): { path: PropertyKey[]; message: string }[] {
  const path = [...issue.path];
  const found = describeValue(valueAt(data, path));
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => {
        const known = knownKeysAt(path);
        const close = closestTo(key, known);
        return {
          path: [...path, key],
          message: `unknown field ${JSON.stringify(key)}${close ? `; did you mean ${close}?` : `; expected one of ${known.join(', ')}`}`,
        };
      });
    case 'invalid_type': {
      if (valueAt(data, path) === undefined)
        return [{ path, message: `missing: expected ${TYPE_WORDS[issue.expected] ?? issue.expected}` }];
      return [{ path, message: `expected ${TYPE_WORDS[issue.expected] ?? issue.expected}, found ${found}` }];
    }
    case 'invalid_value':
      return [{ path, message: `expected ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}, found ${found}` }];
    case 'invalid_union': {
      const last = path[path.length - 1];
      const fileLike = ['image', 'video'].includes(String(last)) || typeof last === 'number';
      if (path[0] === 'prices' && path.length === 2)
        return [
          {
            path,
            message: `expected the credits of one job (a number), or for video a table of resolution → duration → credits, found ${found}`,
          },
        ];
      return [
        {
          path,
          message: fileLike
            ? `expected a file path or { from: item-id }, found ${found}`
            : `expected ${found === 'a mapping' ? 'a single value or a table of values' : 'another kind of value'}, found ${found}`,
        },
      ];
    }
    case 'too_small':
      if (issue.origin === 'array')
        return [
          {
            path,
            message:
              issue.minimum === 1
                ? `expected at least one entry, found an empty list`
                : `expected at least ${issue.minimum} entries`,
          },
        ];
      if (issue.origin === 'string') return [{ path, message: 'expected a non-empty text' }];
      return [
        { path, message: `expected ${issue.inclusive ? 'at least' : 'more than'} ${issue.minimum}, found ${found}` },
      ];
    case 'too_big':
      return [{ path, message: `expected at most ${issue.maximum}, found ${found}` }];
    default:
      return [{ path, message: `${issue.message}, found ${found}` }];
  }
}
