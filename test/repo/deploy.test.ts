import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { EXIT } from '../../src/util/exit-error.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** The exit codes a restart cannot change: the Job fails on them at once. */
const FINAL = [EXIT.incomplete, EXIT.usage, EXIT.stopped];

describe("docs/batch.md's Kubernetes Job follows the exit codes", () => {
  const page = read('docs/batch.md');
  const block = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parse(m[1]!)).find((d) => d?.kind === 'Job');

  it('fails the Job on 1, 2 and 3, and leaves 4, an interrupt and a kill to be retried', () => {
    expect(block).toBeDefined();
    const { spec } = block;
    const container = spec.template.spec.containers[0];
    expect(spec.template.spec.restartPolicy).toBe('Never');
    expect(spec.backoffLimit).toBeGreaterThan(0);
    const rules = spec.podFailurePolicy.rules as {
      action: string;
      onExitCodes?: { containerName: string; operator: string; values: number[] };
      onPodConditions?: { type: string }[];
    }[];
    const failing = rules.filter((r) => r.action === 'FailJob' && r.onExitCodes);
    expect(failing.flatMap((r) => r.onExitCodes!.values).sort()).toEqual([...FINAL].sort());
    for (const rule of failing)
      expect([rule.onExitCodes!.containerName, rule.onExitCodes!.operator]).toEqual([container.name, 'In']);
    // Nothing else ends the Job: 4, 130 and a kill (137) restart it, and a node taken away is not counted.
    const listed = rules.flatMap((r) => r.onExitCodes?.values ?? []);
    for (const code of [EXIT.environment, EXIT.interrupted, 137]) expect(listed).not.toContain(code);
    expect(
      rules.some((r) => r.action === 'Ignore' && r.onPodConditions?.some((c) => c.type === 'DisruptionTarget')),
    ).toBe(true);
  });

  it('runs genbatch from the image, its state on the volume the Dockerfile declares', () => {
    const container = block.spec.template.spec.containers[0];
    expect(container.command).toBeUndefined();
    expect(container.args[0]).toBe('run');
    const state = container.args[container.args.indexOf('--state') + 1] as string;
    const mount = (container.volumeMounts as { mountPath: string }[]).find((m) => state.startsWith(`${m.mountPath}/`));
    expect(mount?.mountPath).toBe('/state');
    expect(read('Dockerfile')).toMatch(/^VOLUME \["\/state"\]$/m);
  });

  it('has a row for every exit code in its table', () => {
    const rows = [...page.matchAll(/^\| (\d+)[ ,|]/gm)].map((m) => Number(m[1]));
    expect(rows.sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });
});

describe('the Dockerfile', () => {
  const file = read('Dockerfile');
  const stages = [...file.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!);

  it('is multi-stage, on a maintained Node line, with production dependencies only', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const image of stages) expect(image).toMatch(/^node:(22|24|26)[.-]/);
    expect(file).toMatch(/npm ci\b/);
    expect(file).toMatch(/npm prune --omit=dev/);
  });

  it('runs as a non-root user under an init that forwards signals', () => {
    const last = file.slice(file.lastIndexOf('\nFROM '));
    const user = /^USER (\S+)/m.exec(last)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(last).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", "genbatch"\]$/m);
  });

  it('copies only what the build needs, and no local state or outputs', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const path of ['node_modules', 'dist', '.genbatch', 'out']) expect(ignored).toContain(path);
  });
});
