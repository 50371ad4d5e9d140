/**
 * The simulator's model catalog. The spec shows `kind`, `creditCost`, `mode`,
 * `durations`, `resolutions` and `aspectRatios`; the id field (`id`), the video
 * price field (`prices`) and the image models' allowed values are this
 * simulator's choices, which genbatch must not depend on.
 */
export type VideoMode = 'image-to-video' | 'reference-to-video' | 'video-extend' | 'video-edit';

export interface ImageModel {
  id: string;
  name: string;
  kind: 'generate' | 'edit';
  creditCost: number;
  resolutions: string[];
  aspectRatios: string[];
  maxInputs: number;
}

export interface VideoPrice {
  resolution: string;
  duration: string;
  credits: number;
}

export interface VideoModel {
  id: string;
  name: string;
  mode: VideoMode;
  durations: string[];
  resolutions: string[];
  aspectRatios: string[];
  prices: VideoPrice[];
  maxReferenceImages: number;
}

const IMAGE_RATIOS = ['1:1', '4:5', '5:4', '3:2', '2:3', '16:9', '9:16'];
const VIDEO_RATIOS = ['16:9', '9:16', '1:1'];

function videoPrices(per5s720p: number): VideoPrice[] {
  const prices: VideoPrice[] = [];
  for (const [resolution, factor] of [
    ['720p', 1],
    ['1080p', 1.8],
  ] as const) {
    for (const duration of ['5', '10']) {
      prices.push({ resolution, duration, credits: Math.round(per5s720p * factor * (Number(duration) / 5)) });
    }
  }
  return prices;
}

export const IMAGE_MODELS: ImageModel[] = [
  {
    id: 'studio-xl',
    name: 'Studio XL',
    kind: 'generate',
    creditCost: 8,
    resolutions: ['1K', '2K', '4K'],
    aspectRatios: IMAGE_RATIOS,
    maxInputs: 0,
  },
  {
    id: 'studio-lite',
    name: 'Studio Lite',
    kind: 'generate',
    creditCost: 2,
    resolutions: ['1K', '2K'],
    aspectRatios: IMAGE_RATIOS,
    maxInputs: 0,
  },
  {
    id: 'studio-edit',
    name: 'Studio Edit',
    kind: 'edit',
    creditCost: 10,
    resolutions: ['1K', '2K'],
    aspectRatios: IMAGE_RATIOS,
    maxInputs: 4,
  },
];

export const VIDEO_MODELS: VideoModel[] = [
  {
    id: 'motion-2',
    name: 'Motion 2',
    mode: 'image-to-video',
    durations: ['5', '10'],
    resolutions: ['720p', '1080p'],
    aspectRatios: VIDEO_RATIOS,
    prices: videoPrices(100),
    maxReferenceImages: 0,
  },
  {
    id: 'motion-ref',
    name: 'Motion Reference',
    mode: 'reference-to-video',
    durations: ['5', '10'],
    resolutions: ['720p', '1080p'],
    aspectRatios: VIDEO_RATIOS,
    prices: videoPrices(120),
    maxReferenceImages: 3,
  },
  {
    id: 'motion-extend',
    name: 'Motion Extend',
    mode: 'video-extend',
    durations: ['5', '10'],
    resolutions: ['720p', '1080p'],
    aspectRatios: VIDEO_RATIOS,
    prices: videoPrices(80),
    maxReferenceImages: 0,
  },
  {
    id: 'motion-edit',
    name: 'Motion Edit',
    mode: 'video-edit',
    durations: ['5'],
    resolutions: ['720p'],
    aspectRatios: VIDEO_RATIOS,
    prices: videoPrices(90).filter((p) => p.resolution === '720p' && p.duration === '5'),
    maxReferenceImages: 0,
  },
];

export function videoPrice(model: VideoModel, resolution: string, duration: string): number | undefined {
  return model.prices.find((p) => p.resolution === resolution && p.duration === duration)?.credits;
}

export const IMAGE_CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/webp'];
export const VIDEO_CONTENT_TYPES = ['video/mp4', 'video/quicktime', 'video/webm'];
