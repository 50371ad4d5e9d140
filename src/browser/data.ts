/**
 * What the server hands the pages, as the pages read it: the review app's
 * JSON API and events, the gallery's cards and the plots' series. Type-only
 * and importing nothing, so both the pages and the code that writes these
 * shapes can name them.
 */

/** The run's plots, as uPlot takes them: x in seconds, one array per line, nulls where a line has nothing to say. */
export interface RunSeries {
  /** The bucket's width (ms): the submission window, or a whole number of them. */
  bucketMs: number;
  /** The submission window the limit is counted in (ms, as the run paced it). */
  windowMs: number;
  t: number[];
  /** Submissions per window (averaged when a bucket holds several windows). */
  submissions: number[];
  submitLimit: number;
  /** Credits charged net, cumulated. */
  credits: number[];
  /** The credits the daily cap allowed up to then (the cap times the key days begun). */
  capAllowed: number[];
  budget: number | null;
  /** Jobs sent and not yet ended, at the end of each bucket. */
  inFlight: number[];
  inFlightLimit: number;
}

export type Decision = 'approved' | 'rejected';

/** What the gallery needs of an item to draw its card; file names as relative URLs. */
export interface GalleryCard {
  id: string;
  state: string;
  type: 'image' | 'video';
  model: string;
  prompt: string;
  files: string[];
  charged: number;
  refunded: number;
  code: string | null;
  message: string | null;
  /** Why it is not done where that is no failure: what a waiting item waits for, why a decision skipped it. */
  reason?: string;
  poster?: string;
  aspectRatio: string | null;
  resolution: string | null;
  duration: string | null;
  /** The job whose outputs these are (the last attempt's). */
  jobId: string | null;
  /** The item's row columns and matrix values, to group by. */
  values: Record<string, string>;
  /** The review decision on the current version (read-only there: genbatch review makes them). */
  review?: { decision: Decision; note: string | null };
  /** The current version, when the item was regenerated (2 and up). */
  version?: number;
  /** The web copies of its outputs (derivatives): where each is, and its format and size. */
  copies?: { href: string; label: string }[];
}

/** One card of the review grid: the item and its current version's first output. */
export interface ReviewCardData {
  id: string;
  state: string;
  type: 'image' | 'video';
  model: string;
  prompt: string;
  /** The current version, when one is on disk. */
  version: number | null;
  /** Its first output, relative to the output dir. */
  file: string | null;
  /** A web copy of it to show on the card (the smallest at least 400 pixels wide, else the largest), when made. */
  copy: string | null;
  decision: Decision | null;
  note: string | null;
  /** The manifest row's columns and matrix values it was made from, shown under its id. */
  values?: Record<string, string>;
  /** A gate made and undecided: the items waiting on it, and their credits, which approving it lets go. */
  unlocks?: { items: number; credits: number; upTo?: { items: number; credits: number } };
  /** Its thumbnail itself, as a `data:` URL: only on the first screen's cards inside the page as served. */
  inlineThumb?: string;
}

/** The cards the review grid asks for at a time; the page's first slice comes inside the page itself. */
export const SLICE = 120;

/**
 * The width a card's image is chosen and made for: a card is about 200 pixels wide, 400 on a dense screen. The
 * grid's SQL picks the web copy by it, and the run and review make thumbnails at it.
 */
export const CARD_WIDTH = 400;

/** A slice of the review grid. */
export interface CardsPage {
  /** Null while not counted: the first slice of a search most items match comes before its count. */
  total: number | null;
  /** With no total: as many as were seen to match. */
  atLeast?: number;
  cards: ReviewCardData[];
}

/** An output downloaded since the app last asked: the live view's newest cards. */
export interface NewOutputData {
  itemId: string;
  path: string;
  type: 'image' | 'video';
  version: number;
}

/** One version of an item, for comparing versions side by side. */
export interface VersionData {
  version: number;
  current: boolean;
  files: string[];
  /** Its outputs' web copies (derivatives). */
  copies: { path: string; format: string; width: number; height: number }[];
  decision: Decision | null;
  note: string | null;
}

/** What the live view's header shows: counts, credits against the budget and cap, the pace, the ETA. */
export interface ReviewSummaryData {
  title: string;
  items: number;
  states: Partial<Record<string, number>>;
  review: { approved: number; rejected: number; unreviewed: number };
  credits: { charged: number; refunded: number; net: number; budget: number | null };
  today: { charged: number; dailyCap: number };
  pace: { sent: number; limit: number; windowMs: number; timeScale: number };
  inFlight: number;
  run: { running: boolean; pausedSince: number | null };
  eta: { seconds: number; at: string } | null;
  models: string[];
  tags: string[];
}

/** What a decision's POST answers. */
export interface DecisionAnswer {
  error?: string;
  refused?: string[];
  cards?: ReviewCardData[];
  review?: ReviewSummaryData['review'];
}
