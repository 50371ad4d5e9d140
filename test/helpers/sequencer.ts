import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files whose few tests are whole runs in real processes, 15-25 s each (the chaos seeds, the kill loops), and the
 * property test of the item's life (35 s alone, 55-75 s beside the others). With no
 * timings kept (a clean clone, as in CI) vitest starts the largest files first, and these small ones came last: the
 * suite's last 20-45 s on one or three workers of four while the others had nothing left.
 */
const LONG =
  /[\\/]test[\\/](reliability[\\/](chaos|crash-safety|lifecycle\.property)|runner[\\/](kill-loop|gates))[^\\/]*\.test\.ts$/;

/** vitest's order (the slowest first when it kept timings, else the largest), the long files before all. */
export class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const long = sorted.filter((f) => LONG.test(f.moduleId));
    return [...long, ...sorted.filter((f) => !LONG.test(f.moduleId))];
  }
}
