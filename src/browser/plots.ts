import type UPlot from 'uplot';
import type { RunSeries } from './data.js';

/** uPlot, loaded as a script of its own (behind the language fallback of language.ts): a page without plots never loads it. */
const uPlotGlobal = (): typeof UPlot | undefined => (globalThis as { uPlot?: typeof UPlot }).uPlot;

interface Line {
  label: string;
  stroke: string;
  fill?: string;
  dash?: number[];
  data: (number | null)[];
}

interface PlotDef {
  title: string;
  max?: number;
  lines: Line[];
}

const HEIGHT = 170;
const constant = (t: number[], v: number) => t.map(() => v);

/** The three plots: submissions per window against the limit, credits against the daily cap and the budget, jobs in flight against the slots. */
function defs(s: RunSeries): PlotDef[] {
  const perWindow = `per ${s.windowMs >= 60_000 ? `${s.windowMs / 60_000} min` : `${s.windowMs / 1000} s`}`;
  return [
    {
      title: `submissions ${perWindow}`,
      lines: [
        { label: 'sent', stroke: '#2186eb', fill: '#2186eb22', data: s.submissions },
        { label: 'limit', stroke: '#e12d39', dash: [6, 4], data: constant(s.t, s.submitLimit) },
      ],
    },
    {
      title: 'credits charged (net)',
      // Scaled to the credits and the budget: a daily cap far above them would flatten the line to nothing.
      max: Math.max(10, Math.max(...s.credits, 0) * 1.25, (s.budget ?? 0) * 1.1),
      lines: [
        { label: 'credits', stroke: '#27ab83', fill: '#27ab8322', data: s.credits },
        { label: 'daily cap', stroke: '#f7c948', dash: [6, 4], data: s.capAllowed },
        ...(s.budget ? [{ label: 'budget', stroke: '#e12d39', dash: [2, 3], data: constant(s.t, s.budget) }] : []),
      ],
    },
    {
      title: 'jobs in flight',
      lines: [
        { label: 'in flight', stroke: '#9446ed', fill: '#9446ed22', data: s.inFlight },
        { label: 'slots', stroke: '#e12d39', dash: [6, 4], data: constant(s.t, s.inFlightLimit) },
      ],
    },
  ];
}

/** The run's plots in an element: drawn once, then redrawn with new data (the review app's live view). */
export class RunPlots {
  private charts: UPlot[] = [];
  private root: HTMLElement | undefined;
  /** The newest series, in before uPlot's script had run: drawn once the page's scripts have all run. */
  private waiting: RunSeries | undefined;

  get drawn(): boolean {
    return this.root !== undefined;
  }

  draw(element: HTMLElement, s: RunSeries): void {
    this.root = element;
    this.build(s);
    window.addEventListener('resize', () => {
      for (const chart of this.charts) chart.setSize({ width: this.width(), height: HEIGHT });
    });
  }

  update(s: RunSeries): void {
    if (!this.root) return;
    if (this.waiting) {
      this.waiting = s;
      return;
    }
    if (this.charts.length === 0 || !s.t.length) {
      this.build(s);
      return;
    }
    for (const [i, d] of defs(s).entries())
      this.charts[i]?.setData([s.t, ...d.lines.map((l) => l.data)] as UPlot.AlignedData);
  }

  private width(): number {
    return Math.max(260, Math.floor((this.root!.clientWidth - 60) / 3) - 12);
  }

  private note(text: string): void {
    this.root!.append(Object.assign(document.createElement('p'), { className: 'plots-empty', textContent: text }));
  }

  private build(s: RunSeries): void {
    const root = this.root!;
    const Plot = uPlotGlobal();
    // uPlot's script comes after the page's own: a live feed's first series can be in before it has run (on a
    // slow machine), and the plots were then said undrawable until the state next changed, which after a run is never.
    if (typeof Plot !== 'function' && document.readyState === 'loading') {
      if (!this.waiting)
        document.addEventListener('DOMContentLoaded', () => {
          const newest = this.waiting!;
          this.waiting = undefined;
          this.build(newest);
        });
      this.waiting = s;
      return;
    }
    root.replaceChildren();
    this.charts = [];
    if (typeof Plot !== 'function') {
      this.note('the plots could not be drawn in this browser');
      return;
    }
    if (!s.t.length) {
      this.note('nothing submitted yet: the plots start with the first submission');
      return;
    }
    for (const d of defs(s)) {
      const box = document.createElement('div');
      box.className = 'plot';
      box.dataset.title = d.title;
      root.append(box);
      const options: UPlot.Options = {
        title: d.title,
        width: this.width(),
        height: HEIGHT,
        scales: { x: { time: true }, y: d.max ? { range: [0, d.max] } : {} },
        axes: [{}, { size: 56 }],
        series: [
          {},
          ...d.lines.map((l) => ({
            label: l.label,
            stroke: l.stroke,
            ...(l.fill ? { fill: l.fill } : {}),
            ...(l.dash ? { dash: l.dash } : {}),
            width: 1.5,
            points: { show: false },
          })),
        ],
        legend: { live: false },
      };
      this.charts.push(new Plot(options, [s.t, ...d.lines.map((l) => l.data)] as UPlot.AlignedData, box));
    }
  }
}
