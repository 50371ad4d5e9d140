// The browser's language is made one Intl knows before uPlot loads (imports run in order).
import './language.js';
import uPlot from 'uplot';

/** The plots read it as a global, as before: a page without plots never loads it. */
(globalThis as { uPlot?: typeof uPlot }).uPlot = uPlot;
