/** The review app's one page; __TOKEN__ is replaced by the server with the URL's token (for the scripts and styles it loads). */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>genbatch review</title>
<link rel="stylesheet" href="/uplot.css?token=__TOKEN__">
<link rel="stylesheet" href="/app.css?token=__TOKEN__">
</head>
<body>
<header>
<div class="top"><h1 id="title">genbatch review</h1><span id="live" class="live" title="live: the page follows the state">●</span><span id="run"></span><button type="button" id="help-button" aria-label="keyboard help">?</button></div>
<section id="summary" aria-label="summary"></section>
<section id="plots" aria-label="plots"></section>
<section id="newest" aria-label="newest outputs"><span class="label">newest</span><div id="newest-strip"></div></section>
<form id="filters" aria-label="filters">
<label>review <select id="f-review"><option value="">all</option><option value="unreviewed">unreviewed</option><option value="approved">approved</option><option value="rejected">rejected</option></select></label>
<label>state <select id="f-state"><option value="">all</option></select></label>
<label>model <select id="f-model"><option value="">all</option></select></label>
<label>search <input type="search" id="f-search" placeholder="id, prompt, values (/)" autocomplete="off"></label>
<output id="shown"></output>
<span id="selection"></span>
</form>
</header>
<main id="scroller" tabindex="0" aria-label="outputs"><div id="space"></div></main>
<div id="toast" role="status" hidden></div>
<div id="lightbox" role="dialog" aria-modal="true" aria-label="output" hidden>
<div class="lb-bar"><span id="lb-pos"></span><span class="lb-keys">← → move · a approve · r reject · u clear · n note · c compare · Esc close</span></div>
<div id="lb-body"></div>
</div>
<div id="note" role="dialog" aria-label="note" hidden>
<label for="note-text" id="note-label">note</label>
<textarea id="note-text" rows="3" maxlength="2000"></textarea>
<p class="hint">Enter saves · Shift+Enter new line · Esc cancels</p>
</div>
<div id="help" role="dialog" aria-label="keyboard help" hidden>
<h2>Keys</h2>
<dl>
<dt>← → ↑ ↓ or h l k j</dt><dd>move</dd>
<dt>Shift + move, Shift + click</dt><dd>select a range</dd>
<dt>a</dt><dd>approve (the selection, or the focused card)</dd>
<dt>r or x</dt><dd>reject</dd>
<dt>u</dt><dd>clear the decision</dd>
<dt>z or Ctrl+Z</dt><dd>undo the last decision</dd>
<dt>n</dt><dd>write a note</dd>
<dt>Enter or Space</dt><dd>zoom (lightbox)</dd>
<dt>c</dt><dd>compare the item's versions side by side</dd>
<dt>/</dt><dd>search</dd>
<dt>Esc</dt><dd>close, or clear the selection</dd>
</dl>
<p>Decisions are saved in the state at once. <b>genbatch run &lt;manifest&gt; --redo-rejected</b> regenerates the rejected items; <b>genbatch estimate &lt;manifest&gt; --redo-rejected</b> says what that costs first.</p>
</div>
<script src="/uplot.js?token=__TOKEN__"></script>
<script src="/app.js?token=__TOKEN__"></script>
</body>
</html>
`;

export const APP_STYLE = `
:root { color-scheme: light dark; --bg: #f5f7fa; --card: #fff; --text: #1f2933; --muted: #616e7c; --line: #d9e2ec; --focus: #2186eb; --sel: #2186eb33; }
@media (prefers-color-scheme: dark) { :root { --bg: #12161b; --card: #1c232b; --text: #e4e7eb; --muted: #9aa5b1; --line: #323f4b; --sel: #2186eb44; } }
* { box-sizing: border-box; }
html, body { height: 100%; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--text); display: flex; flex-direction: column; }
header { border-bottom: 1px solid var(--line); padding: 8px 0 8px; flex: none; }
.top { display: flex; align-items: center; gap: 10px; padding: 0 16px; }
h1 { font-size: 18px; margin: 0; }
.live { color: #27ab83; font-size: 12px; }
.live.off { color: #e12d39; }
#run { color: var(--muted); font-size: 12px; flex: 1; }
#help-button { font: inherit; border: 1px solid var(--line); background: var(--card); color: var(--text); border-radius: 999px; width: 26px; height: 26px; cursor: pointer; }
#summary { display: flex; flex-wrap: wrap; gap: 4px 14px; padding: 6px 16px 0; font-size: 13px; }
#summary .stat b { font-variant-numeric: tabular-nums; }
#summary .over { color: #e12d39; }
#newest { display: flex; align-items: center; gap: 8px; padding: 6px 16px 0; min-height: 52px; }
#newest .label { color: var(--muted); font-size: 12px; }
#newest-strip { display: flex; gap: 4px; overflow: hidden; }
#newest-strip img, #newest-strip .vid { width: 44px; height: 44px; object-fit: cover; border-radius: 4px; border: 1px solid var(--line); background: #0001; }
#newest-strip .vid { display: grid; place-items: center; font-size: 10px; }
#filters { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; padding: 8px 16px 0; }
#filters select, #filters input { font: inherit; }
#shown, #selection { color: var(--muted); }
#scroller { flex: 1; overflow-y: auto; position: relative; outline: none; }
#space { position: relative; }
.card { position: absolute; background: var(--card); border: 2px solid var(--line); border-radius: 8px; overflow: hidden; display: flex; flex-direction: column; cursor: pointer; }
.card.focus { border-color: var(--focus); box-shadow: 0 0 0 2px var(--focus); }
.card.selected { background: var(--sel); }
.card .media { flex: 1; min-height: 0; display: flex; background: #0001; }
.card .media img, .card .media video { width: 100%; height: 100%; object-fit: cover; }
.card .media .empty { margin: auto; color: var(--muted); font-size: 12px; }
.card .meta { padding: 4px 8px 6px; font-size: 12px; display: flex; gap: 6px; align-items: center; flex-wrap: wrap; }
.card .id { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 100%; }
.badge { font-size: 11px; font-weight: 600; border-radius: 4px; padding: 0 6px; background: #0001; white-space: nowrap; }
.d-approved { background: #c6f7e2; color: #014d40; }
.d-rejected { background: #ffe3e3; color: #8a041a; }
.d-unreviewed { background: #e4e7eb; color: #3e4c59; }
.card.d-approved-card { border-color: #3ebd93; }
.card.d-rejected-card { border-color: #ef4e4e; }
.card.focus.d-approved-card, .card.focus.d-rejected-card { border-color: var(--focus); }
.card .note { color: var(--muted); font-style: italic; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; width: 100%; }
#toast { position: fixed; bottom: 16px; left: 50%; transform: translateX(-50%); background: #1f2933; color: #fff; padding: 6px 14px; border-radius: 6px; }
#lightbox { position: fixed; inset: 0; background: #000000f2; color: #fff; display: flex; flex-direction: column; z-index: 5; }
#lightbox[hidden], #note[hidden], #help[hidden], #toast[hidden] { display: none; }
.lb-bar { display: flex; gap: 16px; padding: 8px 16px; font-size: 13px; }
.lb-keys { color: #cbd2d9; }
#lb-body { flex: 1; min-height: 0; display: flex; gap: 12px; padding: 8px 16px 16px; }
#lb-body figure { flex: 1; min-width: 0; margin: 0; display: flex; flex-direction: column; gap: 6px; }
#lb-body figure img, #lb-body figure video { flex: 1; min-height: 0; object-fit: contain; width: 100%; }
#lb-body figcaption { font-size: 13px; }
#lb-body figure.current figcaption b { color: #8bd3ff; }
#note, #help { position: fixed; top: 20%; left: 50%; transform: translateX(-50%); background: var(--card); color: var(--text); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; z-index: 6; width: min(520px, 90vw); box-shadow: 0 8px 30px #0004; }
#note textarea { width: 100%; font: inherit; }
#note .hint { color: var(--muted); font-size: 12px; margin: 4px 0 0; }
#help dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; }
#help dt { font-family: ui-monospace, monospace; }
`;
