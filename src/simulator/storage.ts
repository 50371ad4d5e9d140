import type { Service } from './service.js';
import { OUTPUT_CONTENT_TYPE, type SimJob } from './jobs.js';
import { makeMp4, makePng } from './media.js';
import { MARKERS } from './submissions.js';
import type { StorageFaultInjector } from './types.js';

export interface StorageResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** How to send the body: cut short after half, slowly in small pieces, without end (bounded), or half of it and then nothing on an open connection. */
  delivery?: 'truncate' | 'slow' | 'endless' | 'stall';
}

/** S3-style error bodies: object storage is not the service and does not speak its JSON errors. */
function storageError(status: number, code: string, message: string): StorageResponse {
  const body = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>\n`,
  );
  return { status, headers: { 'Content-Type': 'application/xml' }, body };
}

/** The object storage behind presigned links: upload PUTs and output GETs. */
export class Storage {
  /** Set by tests to break some output downloads. */
  inject: StorageFaultInjector | undefined;
  private readonly seen = new Map<string, number>();

  constructor(private readonly service: Service) {}

  /** Whether this PUT stalls: storage stops reading its body and never answers (the test's injector decides, by path and try). */
  putStalls(path: string): boolean {
    const key = `PUT ${path}`;
    const seen = this.seen.get(key) ?? 0;
    this.seen.set(key, seen + 1);
    return this.inject?.(path, seen) === 'stall';
  }

  put(path: string, query: URLSearchParams, contentType: string | undefined, body: Buffer): StorageResponse {
    const { service } = this;
    const now = service.now();
    const match = /^\/uploads\/([^/]+)$/.exec(path);
    const upload = match ? service.uploads.byKey.get(match[1]!) : undefined;
    const verdict = service.presigner.verify(path, query, now);
    let response: StorageResponse;
    if (!upload || verdict === 'bad-signature')
      response = storageError(403, 'SignatureDoesNotMatch', 'The request signature does not match.');
    else if (verdict === 'expired') response = storageError(403, 'AccessDenied', 'Request has expired.');
    else {
      const problem = service.uploads.receive(upload, contentType, body);
      response = problem
        ? storageError(400, 'BadRequest', problem)
        : { status: 200, headers: {}, body: Buffer.alloc(0) };
    }
    service.ledger.record({
      kind: 'upload-put',
      at: now,
      uploadKey: match?.[1] ?? path,
      status: response.status,
      bytes: body.length,
    });
    return response;
  }

  get(path: string, query: URLSearchParams): StorageResponse {
    const { service } = this;
    const now = service.now();
    const match = /^\/outputs\/([^/]+)\/(\d+)$/.exec(path);
    const job = match ? service.jobs.byId.get(match[1]!) : undefined;
    const index = Number(match?.[2]);
    const verdict = service.presigner.verify(path, query, now);
    const seen = this.seen.get(path) ?? 0;
    this.seen.set(path, seen + 1);
    const fault = this.inject?.(path, seen);
    let response: StorageResponse;
    if (fault === 'forbidden') {
      response = storageError(403, 'AccessDenied', 'Access Denied');
    } else if (
      !job ||
      verdict === 'bad-signature' ||
      job.status !== 'COMPLETED' ||
      index < 1 ||
      index > job.outputCount
    ) {
      response = storageError(403, 'SignatureDoesNotMatch', 'The request signature does not match.');
    } else if (verdict === 'expired') {
      response = storageError(403, 'AccessDenied', 'Request has expired.');
    } else {
      const body = outputBytes(job, index);
      const ext = job.type === 'image' ? 'png' : 'mp4';
      const disposition = query.get('disposition') === 'attachment' ? 'attachment' : 'inline';
      response = {
        status: 200,
        headers: {
          'Content-Type': fault === 'html' ? 'text/html' : OUTPUT_CONTENT_TYPE[job.type],
          'Content-Disposition': `${disposition}; filename="${job.id}-${index}.${ext}"`,
        },
        body,
        ...(fault === 'truncate' || fault === 'slow' || fault === 'endless' || fault === 'stall'
          ? { delivery: fault }
          : {}),
      };
    }
    service.ledger.record({
      kind: 'download',
      at: now,
      jobId: job?.id ?? path,
      index,
      status: response.status,
      bytes: response.body.length,
    });
    return response;
  }
}

/** The bytes of a job's output (from 1): the same at every download. */
export function outputBytes(job: Pick<SimJob, 'id' | 'type' | 'prompt'>, index: number): Buffer {
  const seed = `${job.id}/${index}`;
  if (job.type !== 'image') return makeMp4(seed);
  const [width, height] = job.prompt.includes(MARKERS.large) ? [1024, 1280] : [192, 192];
  return makePng(seed, width, height, job.prompt.includes(MARKERS.flat));
}
