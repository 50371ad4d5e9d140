import { randomUUID } from 'node:crypto';
import { onTestFinished } from 'vitest';
import { ApiClient } from '../../src/api/index.js';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator/index.js';

export interface TestSim {
  sim: RunningSimulator;
  client: ApiClient;
  /** A raw request to the simulator, for what the typed client would never send. */
  raw(
    method: string,
    path: string,
    init?: { key?: string | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; headers: Headers; json: any }>;
}

/**
 * A simulator on port 0 and a client for it, both closed when the test ends. It stands in for the real service
 * (it does not say it is a simulator, so a run's state and outputs are a real run's) unless `announce` is set.
 */
export async function startTestSim(options: SimulatorOptions = {}): Promise<TestSim> {
  const sim = await startSimulator({ port: 0, announce: false, ...options });
  const client = new ApiClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey });
  onTestFinished(async () => {
    await client.close();
    await sim.close();
  });
  return {
    sim,
    client,
    async raw(method, path, init = {}) {
      const headers: Record<string, string> = { ...init.headers };
      const key = init.key === undefined ? sim.apiKey : init.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      if (init.body !== undefined) headers['content-type'] ??= 'application/json';
      const res = await fetch(`${sim.baseUrl}${path}`, {
        method,
        headers,
        ...(init.body !== undefined
          ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }
          : {}),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
    },
  };
}

export const imageBody = (prompt = 'a ceramic mug on a walnut table', model = 'studio-xl') => ({
  prompt,
  model,
  aspectRatio: '4:5',
  resolution: '2K',
});

export { randomUUID as newKey };

/** Captures what a promise rejects with. */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}
