import type { IncomingHttpHeaders } from 'node:http';

export interface SimRequest {
  method: string;
  /** Path below the base URL's `/v1`, e.g. `/jobs/job_1`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body; `undefined` when there was none. */
  body: unknown;
  /** Set when the body was present but not JSON. */
  bodyError?: string;
}

export interface SimResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** Close the connection without answering: the job was created, the response is lost. */
  drop?: boolean;
}

/**
 * A test's hand on the wire: called for every service request (with how many
 * requests to that method and path came before) and may answer in the
 * service's place, or reset the connection before anything is handled.
 */
export type FaultInjector = (req: SimRequest, seen: number) => SimResponse | 'reset' | undefined;

/**
 * A test's hand on the answer: called after the service handled a request
 * (a job created and charged, say), and may replace what the client receives:
 * an unreadable 202, a 502 after the commit. The service's state stays as it is.
 */
export type ResponseTamperer = (req: SimRequest, response: SimResponse, seen: number) => SimResponse | undefined;

/** The same for object storage downloads: cut the body short, send it slowly, refuse, lie about its type, or never end it. */
export type StorageFault = 'truncate' | 'slow' | 'forbidden' | 'html' | 'endless' | 'stall' | undefined;
export type StorageFaultInjector = (path: string, seen: number) => StorageFault;
