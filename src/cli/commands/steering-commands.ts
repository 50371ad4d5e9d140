import { steer, type ControlCommand } from '../../library/steering.js';
import type { FlagValues } from '../../options/flag.js';
import type { STATE_FLAGS } from '../../options/flags.js';

/** `genbatch pause|resume|drain`: the library's steering, said in a line or as JSON. */
export async function steeringCommand(
  command: ControlCommand,
  path: string,
  flags: FlagValues<typeof STATE_FLAGS>,
  cwd: string,
): Promise<string> {
  const result = await steer(command, path, flags, cwd);
  return flags.json ? JSON.stringify(result, null, 2) : result.message;
}
