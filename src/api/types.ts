export type MediaType = 'image' | 'video';

export interface JobOutput {
  url?: string;
  downloadUrl: string;
  contentType?: string;
}

/** A job as genbatch uses it; `raw` keeps every field the service sent. */
export interface Job {
  id: string;
  status: string;
  outputs: JobOutput[];
  /** `credits.refunded`; 0 when absent. */
  refunded: number;
  /** The charged amount, when the service reports one (not shown by the spec). */
  charged?: number;
  error?: { code: string; message?: string };
  origin?: string;
  raw: Record<string, unknown>;
}

export interface Model {
  id: string;
  type: MediaType;
  kind?: 'generate' | 'edit';
  creditCost?: number;
  mode?: string;
  durations?: string[];
  resolutions?: string[];
  aspectRatios?: string[];
  raw: Record<string, unknown>;
}

export interface Account {
  credits: number;
  subscriptionCredits?: number;
  scopes: string[];
  /** The key's daily credit cap, when the response names it in a way we recognise. */
  dailyCap?: number;
  /** Credits charged on the key today, and when its day resets (ms since the epoch), when the response names them. */
  usedToday?: number;
  resetAt?: number;
  /** The key's other limits, those `/me` names in a way we recognise. */
  limits?: {
    submit?: { count: number; windowMs: number };
    read?: { count: number; windowMs: number };
    upload?: { count: number; windowMs: number };
    maxImagesInFlight?: number;
    maxVideosInFlight?: number;
  };
  raw: Record<string, unknown>;
}

export interface UploadGrantRequest {
  kind: 'image' | 'video';
  target: 'image' | 'video';
  contentType: string;
  size: number;
}

export interface UploadGrant {
  uploadUrl: string;
  key: string;
  expiresAt?: Date;
}

export interface ImageSubmission {
  prompt: string;
  model: string;
  aspectRatio?: string;
  resolution?: string;
  inputs?: { key: string }[];
}

export interface VideoSubmission {
  prompt: string;
  model: string;
  duration?: string;
  resolution?: string;
  aspectRatio?: string;
  imageKey?: string;
  referenceImageKeys?: string[];
  videoKey?: string;
  sourceJobId?: string;
}

export interface JobsPage {
  jobs: Job[];
  nextCursor?: string;
}
