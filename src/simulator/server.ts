import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { resolveOptions } from './options.js';
import type { OutageMode, ScheduledOutage, SimulatorOptions } from './options.js';

export type { OutageMode, ScheduledOutage } from './options.js';
import { Service } from './service.js';
import { Storage } from './storage.js';

export interface RunningSimulator {
  /** Ends with `/v1`, like the real service's base URL. */
  baseUrl: string;
  /** The first key's token. */
  apiKey: string;
  /** Every key's token by label. */
  keys: Record<string, string>;
  service: Service;
  storage: Storage;
  /**
   * Takes the service off the network at once: every open connection is cut
   * (an answer being written is lost) and new ones are refused or reset. Its
   * state (jobs, charges, keys) lives on.
   */
  outage(mode?: OutageMode): Promise<void>;
  /** Back on the same port after an outage. */
  restore(): Promise<void>;
  /** Whether an outage is on. */
  readonly down: boolean;
  close(): Promise<void>;
}

const MAX_API_BODY = 1024 * 1024;
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK.test(host))
    throw new Error(`The simulator listens on loopback only; ${host} is not a loopback address.`);
  const resolved = resolveOptions(options);
  let origin = '';
  const service = new Service(resolved, () => `${origin}/storage`);
  const storage = new Storage(service);
  const network: Network = new Network(host, (req, res): Promise<void> => {
    const url = new URL(req.url ?? '/', origin);
    if (url.pathname.startsWith('/storage/'))
      return serveStorage(req, res, url, storage, resolved.limits.maxVideoUploadBytes);
    return serveApi(req, res, url, service, () => network.mode);
  });
  const address = await network.start(options.port ?? 0);
  origin = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  const keys = Object.fromEntries([...service.accounts.keys.values()].map((k) => [k.label, k.token]));
  const outage = (mode: OutageMode = 'refuse') => network.outage(mode);
  const restore = () => network.restore();
  const unwatch = scheduleOutages(service, options.outages ?? [], outage, restore);
  return {
    storage,
    baseUrl: `${origin}/v1`,
    apiKey: [...service.accounts.keys.values()][0]!.token,
    keys,
    service,
    outage,
    restore,
    get down() {
      return network.isDown;
    },
    async close() {
      unwatch();
      service.close();
      await network.close();
    },
  };
}

/**
 * The simulator on the network: listening on its port, its sockets, and
 * the outages a test asks for (refused, reset or hung connections). The
 * port opens and closes one change after the other.
 */
class Network {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private down: OutageMode | undefined;
  private listening = false;
  private closed = false;
  private port = 0;
  private transitions = Promise.resolve();

  constructor(
    private readonly host: string,
    handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  ) {
    this.server = createServer((req, res) => {
      handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, {}, { error: { code: 'INTERNAL', message: String(error) } });
        else res.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      if (this.down === 'reset') return void socket.resetAndDestroy();
      if (this.down === 'hang') socket.pause();
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  get isDown(): boolean {
    return this.down !== undefined;
  }

  get mode(): OutageMode | undefined {
    return this.down;
  }

  async start(port: number): Promise<AddressInfo> {
    await this.listen(port);
    const address = this.server.address() as AddressInfo;
    this.port = address.port;
    return address;
  }

  /** Cut at once (the answer being written is lost; a black hole cuts nothing, it only stops answering); the port's state follows in turn. */
  outage(mode: OutageMode): Promise<void> {
    this.down = mode;
    if (mode !== 'blackhole') this.cutAll();
    return this.serially(async () => {
      if (this.down === 'refuse') await this.stopListening();
      else if (this.down && !this.listening && !this.closed) await this.listen(this.port);
    });
  }

  restore(): Promise<void> {
    if (!this.down) return this.transitions;
    // Connections a hang left waiting get no answer now either.
    if (this.down === 'hang') this.cutAll();
    this.down = undefined;
    return this.serially(async () => {
      if (!this.down && !this.listening && !this.closed) await this.listen(this.port);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.sockets) socket.destroy();
    await this.serially(() => this.stopListening());
  }

  /** A close while an outage's end is reopening the port waits for it, then closes it. */
  private serially(change: () => Promise<void>): Promise<void> {
    this.transitions = this.transitions.then(change, change);
    return this.transitions;
  }

  private listen(port: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, this.host, () => {
        this.server.off('error', reject);
        this.listening = true;
        resolve();
      });
    });
  }

  private stopListening(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (!this.listening) return resolve();
      this.listening = false;
      this.server.close(() => resolve());
    });
  }

  private cutAll(): void {
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
  }
}

/** The presigned storage: uploads and output links, with the delivery faults a test asks for. */
async function serveStorage(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  storage: Storage,
  maxUploadBytes: number,
): Promise<void> {
  const method = req.method ?? 'GET';
  const path = url.pathname.slice('/storage'.length);
  // Storage that stops reading an upload and never answers: the connection stays open until the client gives up.
  if (method === 'PUT' && storage.putStalls(path)) return void req.pause();
  const body = await readBody(req, maxUploadBytes);
  const out =
    method === 'PUT' && body !== 'too-large'
      ? storage.put(path, url.searchParams, req.headers['content-type'], body)
      : method === 'GET' || method === 'HEAD'
        ? storage.get(path, url.searchParams)
        : { status: 405, headers: {}, body: Buffer.alloc(0) };
  if (out.delivery === 'endless') {
    // Bounded, as every load a test makes must be: at most 64 MiB or 20 s, or until the client hangs up.
    res.writeHead(out.status, out.headers);
    const chunk = Buffer.alloc(64 * 1024, 7);
    const until = Date.now() + 20_000;
    for (let sent = 0; sent < 64 * 1024 * 1024 && Date.now() < until && !res.destroyed; sent += chunk.length) {
      if (!res.write(chunk)) await drainedOrClosed(res);
    }
    res.end();
    return;
  }
  res.writeHead(out.status, { ...out.headers, 'Content-Length': out.body.length });
  if (method === 'HEAD') return void res.end();
  if (out.delivery === 'truncate') {
    res.write(out.body.subarray(0, Math.floor(out.body.length / 2)));
    setTimeout(() => res.destroy(), 20);
    return;
  }
  // The full Content-Length said, half the bytes sent, then nothing: the connection stays open until the client gives up.
  if (out.delivery === 'stall') return void res.write(out.body.subarray(0, Math.floor(out.body.length / 2)));
  if (out.delivery === 'slow') {
    for (let i = 0; i < out.body.length; i += 512) {
      res.write(out.body.subarray(i, i + 512));
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  res.end(out.delivery === 'slow' ? undefined : out.body);
}

/** The API under /v1 (and the ledger for tests); an answer is dropped, or not sent while the network is down. */
async function serveApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  service: Service,
  outage: () => OutageMode | undefined,
): Promise<void> {
  const method = req.method ?? 'GET';
  // Swallowed: never reaches the service, never answered, its connection left open.
  if (outage() === 'blackhole') return;
  if (url.pathname === '/__sim/ledger' && method === 'GET')
    return sendJson(res, 200, {}, { totals: service.ledger.totals(), events: service.ledger.events });
  if (!url.pathname.startsWith('/v1/')) {
    const message = `No endpoint ${url.pathname}; the API is under /v1.`;
    return sendJson(res, 404, {}, { error: { code: 'NOT_FOUND', message } });
  }
  const { body, bodyError } = await jsonBody(req);
  const out = await service.handle({
    method,
    path: url.pathname.slice(3),
    query: url.searchParams,
    headers: req.headers,
    body,
    ...(bodyError ? { bodyError } : {}),
  });
  const down = outage();
  // An answer a black hole swallows is never sent; one a cut connection loses goes with it.
  if (down === 'blackhole') return;
  if (out.drop || down) {
    req.socket.destroy();
    return;
  }
  sendJson(res, out.status, out.headers, out.body);
}

/** A request's JSON body, or why it is not one. */
async function jsonBody(req: IncomingMessage): Promise<{ body?: unknown; bodyError?: string }> {
  const raw = await readBody(req, MAX_API_BODY);
  if (raw === 'too-large') return { bodyError: `The body is larger than ${MAX_API_BODY} bytes.` };
  if (raw.length === 0) return {};
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
    return { bodyError: 'Send the body as JSON with Content-Type: application/json.' };
  try {
    return { body: JSON.parse(raw.toString('utf8')) };
  } catch {
    return { bodyError: 'The body is not valid JSON.' };
  }
}

/** Starts each outage as its charge is recorded (before the answer leaves, so the answer is lost), and ends it after its time. */
function scheduleOutages(
  service: Service,
  outages: readonly ScheduledOutage[],
  outage: (mode: OutageMode) => Promise<void>,
  restore: () => Promise<void>,
): () => void {
  if (outages.length === 0) return () => {};
  const timers = new Set<NodeJS.Timeout>();
  let charges = 0;
  const unwatch = service.ledger.watch((event) => {
    if (event.kind !== 'charge') return;
    charges++;
    for (const o of outages) {
      if (o.atCharge !== charges) continue;
      void outage(o.mode ?? 'refuse');
      const timer = setTimeout(() => {
        timers.delete(timer);
        void restore();
      }, o.seconds * 1000);
      timers.add(timer);
    }
  });
  return () => {
    unwatch();
    for (const t of timers) clearTimeout(t);
  };
}

/** Waits for the response to drain or close, and leaves no listener behind either way. */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
