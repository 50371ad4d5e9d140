/**
 * The review app's browser code: a virtual grid (only the visible cards are
 * in the DOM, fetched a slice at a time), keyboard review, the lightbox and
 * version comparison, the live header and plots from server-sent events.
 * Plain DOM, no framework; written without template literals (it is itself one).
 */
export const APP_SCRIPT = `
(function () {
  'use strict';
  var token = new URLSearchParams(location.search).get('token') || '';
  var SLICE = 120;
  var CARD_W = 210;
  var CARD_H = 250;
  var GAP = 10;
  var scroller = document.getElementById('scroller');
  var space = document.getElementById('space');
  var $ = function (id) { return document.getElementById(id); };

  var filter = { review: '', state: '', model: '', q: '' };
  var total = 0;
  var slices = new Map();
  var pending = new Map();
  var generation = 0;
  var cols = 1;
  var focus = 0;
  var anchor = -1;
  var undoStack = [];
  var summary = null;
  var lightboxAt = -1;
  var comparing = false;

  function el(tag, props) {
    var node = document.createElement(tag);
    var children = Array.prototype.slice.call(arguments, 2);
    Object.keys(props || {}).forEach(function (key) {
      var value = props[key];
      if (value === undefined || value === null) return;
      if (key === 'text') node.textContent = value;
      else if (key === 'className') node.className = value;
      else node.setAttribute(key, value);
    });
    children.forEach(function (child) { if (child) node.append(child); });
    return node;
  }
  function withToken(url) { return url + (url.indexOf('?') < 0 ? '?' : '&') + 'token=' + encodeURIComponent(token); }
  function fileUrl(path) { return withToken('/files/' + path.split('/').map(encodeURIComponent).join('/')); }
  function api(path) {
    return fetch(withToken(path), { headers: { 'x-genbatch-token': token } }).then(function (r) {
      if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
      return r.json();
    });
  }
  function post(body) {
    return fetch('/api/review', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-genbatch-token': token },
      body: JSON.stringify(body),
    }).then(function (r) { return r.json().then(function (data) { return { status: r.status, data: data }; }); });
  }
  function toast(text) {
    var t = $('toast');
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.hidden = true; }, 2500);
  }

  // ---- the grid's slices: fetched on demand, dropped when the filter changes ----
  function query(offset) {
    var q = '/api/items?offset=' + offset + '&limit=' + SLICE;
    Object.keys(filter).forEach(function (k) { if (filter[k]) q += '&' + (k === 'q' ? 'q' : k) + '=' + encodeURIComponent(filter[k]); });
    return q;
  }
  // A card decided here after a slice was asked for keeps its local state when that slice arrives.
  var editSeq = 0;
  var edited = new Map();
  function fetchSlice(index) {
    var gen = generation, issued = editSeq;
    return api(query(index * SLICE)).then(function (page) {
      if (gen !== generation) return;
      var old = slices.get(index) || [];
      var mine = new Map(old.map(function (c) { return [c.id, c]; }));
      slices.set(index, page.cards.map(function (c) {
        return (edited.get(c.id) || 0) > issued && mine.has(c.id) ? mine.get(c.id) : c;
      }));
      if (page.total !== total) { total = page.total; layout(); }
      render();
    });
  }
  function loadSlice(index) {
    if (slices.has(index)) return Promise.resolve();
    return track(index);
  }
  function track(index) {
    if (pending.has(index)) return pending.get(index);
    var p = fetchSlice(index).catch(function () {}).then(function () { pending.delete(index); });
    pending.set(index, p);
    return p;
  }
  function cardAt(i) {
    var s = slices.get(Math.floor(i / SLICE));
    return s ? s[i % SLICE] : undefined;
  }
  function reload(keepFocus) {
    generation++;
    slices.clear();
    pending.clear();
    if (!keepFocus) { focus = 0; anchor = -1; scroller.scrollTop = 0; }
    return loadSlice(0).then(function () { showCounts(); });
  }
  /** Fetches again the slices on screen (the live view: new outputs, other states); what is shown stays until they arrive. */
  function refreshVisible() {
    var range = visibleRange();
    var first = Math.floor(range[0] / SLICE), last = Math.floor(Math.max(range[0], range[1] - 1) / SLICE);
    for (var k = first; k <= last; k++) track(k);
  }

  // ---- layout: a tall empty space, with only the visible rows of cards in it ----
  function layout() {
    cols = Math.max(1, Math.floor((scroller.clientWidth - GAP) / (CARD_W + GAP)));
    space.style.height = (Math.ceil(total / cols) * (CARD_H + GAP) + GAP) + 'px';
    showCounts();
  }
  function visibleRange() {
    var rowH = CARD_H + GAP;
    var firstRow = Math.max(0, Math.floor(scroller.scrollTop / rowH) - 1);
    var lastRow = Math.ceil((scroller.scrollTop + scroller.clientHeight) / rowH) + 1;
    return [firstRow * cols, Math.min(total, lastRow * cols)];
  }
  function render() {
    var range = visibleRange();
    var nodes = [];
    for (var i = range[0]; i < range[1]; i++) {
      var card = cardAt(i);
      if (!card) { loadSlice(Math.floor(i / SLICE)); continue; }
      nodes.push(cardNode(card, i));
    }
    space.replaceChildren.apply(space, nodes);
  }
  function decisionOf(card) { return card.decision || (card.version ? 'unreviewed' : null); }
  function isSelected(i) {
    if (anchor < 0) return false;
    return i >= Math.min(anchor, focus) && i <= Math.max(anchor, focus);
  }
  function media(card, big) {
    if (!card.file) return el('div', { className: 'empty', text: card.state });
    if (card.type === 'video') return el('video', { src: fileUrl(card.file), preload: big ? 'auto' : 'metadata', controls: big ? '' : null, muted: '' });
    return el('img', { src: fileUrl(card.file), alt: card.prompt, loading: 'lazy', decoding: 'async' });
  }
  function cardNode(card, i) {
    var d = decisionOf(card);
    var node = el('article', {
      className: 'card' + (i === focus ? ' focus' : '') + (isSelected(i) ? ' selected' : '') + (card.decision ? ' d-' + card.decision + '-card' : ''),
      'data-index': String(i), 'data-id': card.id, 'data-decision': d || '', title: card.prompt,
    },
      el('div', { className: 'media' }, media(card, false)),
      el('div', { className: 'meta' },
        el('span', { className: 'id', text: card.id }),
        el('span', { className: 'badge', text: card.state }),
        d ? el('span', { className: 'badge d-' + d, text: d }) : null,
        card.version > 1 ? el('span', { className: 'badge', text: 'v' + card.version }) : null,
        card.note ? el('span', { className: 'note', text: card.note }) : null));
    var row = Math.floor(i / cols), col = i % cols;
    node.style.left = (GAP + col * (CARD_W + GAP)) + 'px';
    node.style.top = (GAP + row * (CARD_H + GAP)) + 'px';
    node.style.width = CARD_W + 'px';
    node.style.height = CARD_H + 'px';
    return node;
  }
  function showCounts() {
    $('shown').textContent = fmt(total) + ' shown';
    var n = anchor < 0 ? 0 : Math.abs(focus - anchor) + 1;
    $('selection').textContent = n > 1 ? n + ' selected' : '';
  }

  // ---- focus, selection and scrolling ----
  function moveTo(i, extend) {
    if (total === 0) return;
    i = Math.max(0, Math.min(total - 1, i));
    if (extend) { if (anchor < 0) anchor = focus; } else anchor = -1;
    focus = i;
    var rowH = CARD_H + GAP, top = Math.floor(i / cols) * rowH;
    if (top < scroller.scrollTop) scroller.scrollTop = top;
    else if (top + rowH > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = top + rowH - scroller.clientHeight + GAP;
    render();
    showCounts();
    if (!$('lightbox').hidden) openLightbox(i);
  }
  function targets() {
    var from = anchor < 0 ? focus : Math.min(anchor, focus), to = anchor < 0 ? focus : Math.max(anchor, focus);
    var list = [];
    for (var i = from; i <= to; i++) { var c = cardAt(i); if (c && c.version) list.push(c); }
    return list;
  }

  // ---- decisions: saved at once; undo restores what each card had ----
  function decide(decision, note) {
    var list = targets();
    if (list.length === 0) { toast('nothing to review here: no output on disk yet'); return; }
    var items = list.map(function (c) { return { itemId: c.id, version: c.version }; });
    // Without a note given, the server keeps each item's own.
    var body = items.length === 1 ? { itemId: items[0].itemId, version: items[0].version, decision: decision } : { items: items, decision: decision };
    if (note !== undefined) body.note = note;
    undoStack.push(list.map(function (c) { return { itemId: c.id, version: c.version, decision: c.decision, note: c.note }; }));
    editSeq++;
    list.forEach(function (c) {
      edited.set(c.id, editSeq);
      c.decision = decision;
      if (note !== undefined) c.note = note;
    });
    render();

    // The next card is focused at once: keys pressed before the answer act on it, not again on this one.
    if (anchor < 0 && decision && $('lightbox').hidden && $('note').hidden) moveTo(focus + 1, false);
    send(body);
  }
  function send(body) {
    return post(body).then(function (r) {
      if (r.status !== 200) toast(r.data.error || ('not saved for ' + (r.data.refused || []).join(', ')));
      if (r.data.cards) applyCards(r.data.cards);
      if (r.data.review && summary) { summary.review = r.data.review; drawSummary(); }
    }, function (e) { toast('not saved: ' + e.message); });
  }
  function applyCards(cards) {
    editSeq++;
    cards.forEach(function (c) { edited.set(c.id, editSeq); });
    var byId = new Map(cards.map(function (c) { return [c.id, c]; }));
    slices.forEach(function (s) { s.forEach(function (c, k) { if (byId.has(c.id)) s[k] = byId.get(c.id); }); });
    render();
    if (!$('lightbox').hidden) openLightbox(lightboxAt);
  }
  function undo() {
    var last = undoStack.pop();
    if (!last) { toast('nothing to undo'); return; }
    var chain = Promise.resolve();
    last.forEach(function (p) {
      chain = chain.then(function () { return send({ itemId: p.itemId, version: p.version, decision: p.decision, note: p.note }); });
    });
    chain.then(function () { toast('undone'); });
  }
  function openNote() {
    var c = cardAt(focus);
    if (!c || !c.version) { toast('nothing to note here: no output on disk yet'); return; }
    $('note-label').textContent = 'note on ' + c.id + (c.decision ? ' (' + c.decision + ')' : ' (saved as rejected: a note says why)');
    $('note-text').value = c.note || '';
    $('note').hidden = false;
    $('note-text').focus();
  }
  $('note-text').addEventListener('keydown', function (e) {
    e.stopPropagation();
    if (e.key === 'Escape') { $('note').hidden = true; scroller.focus(); }
    else if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      var c = cardAt(focus);
      $('note').hidden = true;
      scroller.focus();
      var keepAnchor = anchor; anchor = -1;
      decide(c.decision || 'rejected', $('note-text').value.trim() || null);
      anchor = keepAnchor;
    }
  });

  // ---- the lightbox: zoom, and the item's versions side by side ----
  function figure(src, type, caption, current) {
    var m = type === 'video' ? el('video', { src: src, controls: '', preload: 'auto' }) : el('img', { src: src, alt: caption });
    return el('figure', { className: current ? 'current' : '' }, m, el('figcaption', {}, caption));
  }
  function openLightbox(i) {
    var c = cardAt(i);
    if (!c) return;
    lightboxAt = i;
    $('lb-pos').textContent = (i + 1) + ' of ' + total + ' · ' + c.id + ' · ' + (decisionOf(c) || c.state) + (c.note ? ' · ' + c.note : '');
    $('lightbox').hidden = false;
    if (comparing) return showVersions(c);
    var caption = el('span', {}, el('b', { text: c.id }), ' ' + c.prompt);
    $('lb-body').replaceChildren(c.file ? figure(fileUrl(c.file), c.type, caption, true) : el('p', { text: c.state }));
  }
  function showVersions(c) {
    api('/api/versions?id=' + encodeURIComponent(c.id)).then(function (v) {
      if (lightboxAt < 0 || (cardAt(lightboxAt) || {}).id !== c.id) return;
      if (!v.versions.length) { $('lb-body').replaceChildren(el('p', { text: 'no version on disk yet' })); return; }
      $('lb-body').replaceChildren.apply($('lb-body'), v.versions.map(function (ver) {
        var caption = el('span', {}, el('b', { text: 'v' + ver.version + (ver.current ? ' (current)' : '') }),
          ' ' + (ver.decision || 'unreviewed') + (ver.note ? ': ' + ver.note : ''));
        return figure(fileUrl(ver.files[0]), c.type, caption, ver.current);
      }));
    });
  }
  function closeLightbox() { $('lightbox').hidden = true; lightboxAt = -1; comparing = false; $('lb-body').replaceChildren(); scroller.focus(); }

  // ---- keys ----
  document.addEventListener('keydown', function (e) {
    if (e.target === $('f-search') || e.target.tagName === 'SELECT') {
      if (e.key === 'Escape' || e.key === 'Enter') { e.preventDefault(); scroller.focus(); }
      return;
    }
    if (!$('note').hidden) return;
    var k = e.key, lb = !$('lightbox').hidden;
    if (k === '?') { $('help').hidden = !$('help').hidden; return; }
    if (k === 'Escape') {
      if (!$('help').hidden) $('help').hidden = true;
      else if (lb) closeLightbox();
      else { anchor = -1; render(); showCounts(); }
      return;
    }
    if ((e.ctrlKey || e.metaKey) && k === 'z') { e.preventDefault(); undo(); return; }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var step = { ArrowRight: 1, l: 1, ArrowLeft: -1, h: -1, ArrowDown: lb ? 1 : cols, j: lb ? 1 : cols, ArrowUp: lb ? -1 : -cols, k: lb ? -1 : -cols }[k];
    if (step) { e.preventDefault(); moveTo(focus + step, e.shiftKey && !lb); return; }
    if (k === 'a') decide('approved');
    else if (k === 'r' || k === 'x') decide('rejected');
    else if (k === 'u') decide(null, null);
    else if (k === 'z') undo();
    else if (k === 'n') { e.preventDefault(); openNote(); }
    else if (k === 'c') { comparing = !(lb && comparing); openLightbox(focus); }
    else if (k === 'Enter' || k === ' ') { e.preventDefault(); if (lb) closeLightbox(); else { comparing = false; openLightbox(focus); } }
    else if (k === '/') { e.preventDefault(); $('f-search').focus(); }
    else if (k === 'Home') moveTo(0, e.shiftKey);
    else if (k === 'End') moveTo(total - 1, e.shiftKey);
  });
  space.addEventListener('click', function (e) {
    var node = e.target.closest('.card');
    if (!node) return;
    moveTo(Number(node.dataset.index), e.shiftKey);
    scroller.focus();
  });
  space.addEventListener('dblclick', function (e) {
    var node = e.target.closest('.card');
    if (node) { comparing = false; openLightbox(Number(node.dataset.index)); }
  });
  $('help-button').addEventListener('click', function () { $('help').hidden = !$('help').hidden; });

  // ---- filters ----
  function onFilter() {
    filter = { review: $('f-review').value, state: $('f-state').value, model: $('f-model').value, q: $('f-search').value.trim() };
    reload(false);
  }
  ['f-review', 'f-state', 'f-model'].forEach(function (id) { $(id).addEventListener('change', onFilter); });
  var searchTimer = 0;
  $('f-search').addEventListener('input', function () { clearTimeout(searchTimer); searchTimer = setTimeout(onFilter, 60); });
  $('filters').addEventListener('submit', function (e) { e.preventDefault(); });

  // ---- the live header, plots and newest outputs ----
  function fmt(n) {
    var text = String(Math.round(Number(n))), out = '';
    while (text.length > 3 && /^[0-9]+$/.test(text.slice(-3))) { out = ',' + text.slice(-3) + out; text = text.slice(0, -3); }
    return text + out;
  }
  function clock(ms) { return new Date(ms).toTimeString().slice(0, 8); }
  function duration(s) {
    if (s < 90) return Math.round(s) + ' s';
    if (s < 5400) return Math.round(s / 60) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }
  function stat(label, value, cls) { return el('span', { className: 'stat ' + (cls || ''), 'data-stat': label }, el('b', { text: value }), ' ' + label); }
  function drawSummary() {
    var s = summary;
    $('title').textContent = s.title;
    document.title = s.title + ' · genbatch review';
    var parts = [stat('items', fmt(s.items))];
    Object.keys(s.states).forEach(function (st) { parts.push(stat(st, fmt(s.states[st]))); });
    parts.push(stat('approved', fmt(s.review.approved)), stat('rejected', fmt(s.review.rejected)), stat('unreviewed', fmt(s.review.unreviewed)));
    var budget = s.credits.budget ? ' of ' + fmt(s.credits.budget) + ' budget' : '';
    parts.push(stat('credits net' + budget, fmt(s.credits.net), s.credits.budget && s.credits.net > s.credits.budget ? 'over' : ''));
    parts.push(stat('today of ' + fmt(s.today.dailyCap) + ' daily cap', fmt(s.today.charged)));
    var windowText = s.pace.timeScale > 1 ? 'per window (time x' + s.pace.timeScale + ')' : 'per ' + duration(s.pace.windowMs / 1000);
    parts.push(stat('of ' + s.pace.limit + ' submissions ' + windowText, fmt(s.pace.sent)));
    parts.push(stat('in flight', fmt(s.inFlight)));
    if (s.eta) parts.push(stat('left (ETA ' + clock(Date.parse(s.eta.at)) + ')', duration(s.eta.seconds)));
    $('summary').replaceChildren.apply($('summary'), parts);
    $('run').textContent = s.run.pausedSince ? 'paused since ' + new Date(s.run.pausedSince).toString().slice(0, 24) : s.run.running ? 'a run is going' : 'no run is going';
    fillSelect('f-state', Object.keys(s.states));
    fillSelect('f-model', s.models);
  }
  function fillSelect(id, values) {
    var select = $(id), have = new Set(Array.prototype.map.call(select.options, function (o) { return o.value; }));
    values.forEach(function (v) { if (!have.has(v)) select.append(el('option', { value: v, text: v })); });
  }
  function addNewest(outputs) {
    var strip = $('newest-strip');
    outputs.slice().reverse().forEach(function (o) {
      var node = o.type === 'video' ? el('span', { className: 'vid', text: 'video', title: o.itemId, 'data-item': o.itemId })
        : el('img', { src: fileUrl(o.path), alt: o.itemId, title: o.itemId + (o.version > 1 ? ' v' + o.version : ''), 'data-item': o.itemId });
      strip.prepend(node);
    });
    while (strip.children.length > 24) strip.lastChild.remove();
  }
  var refreshTimer = 0;
  function connect() {
    var events = new EventSource(withToken('/api/events'));
    events.addEventListener('open', function () { $('live').className = 'live'; });
    events.addEventListener('error', function () { $('live').className = 'live off'; });
    events.addEventListener('summary', function (e) {
      var before = summary;
      summary = JSON.parse(e.data);
      drawSummary();
      if (before && before.items !== summary.items) reload(true);
      else if (before) { clearTimeout(refreshTimer); refreshTimer = setTimeout(refreshVisible, 100); }
    });
    events.addEventListener('series', function (e) {
      var s = JSON.parse(e.data);
      if (!window.genbatchPlots.drawn) { window.genbatchPlots.draw($('plots'), s); window.genbatchPlots.drawn = true; }
      else window.genbatchPlots.update(s);
    });
    events.addEventListener('newest', function (e) { addNewest(JSON.parse(e.data)); });
    events.addEventListener('outputs', function (e) {
      addNewest(JSON.parse(e.data));
      clearTimeout(refreshTimer);
      refreshTimer = setTimeout(function () { if (filter.review || filter.state || filter.q) reload(true); else refreshVisible(); }, 50);
    });
    events.addEventListener('reset', function () { $('newest-strip').replaceChildren(); reload(false); });
  }

  scroller.addEventListener('scroll', function () { requestAnimationFrame(render); });
  window.addEventListener('resize', function () { layout(); render(); });
  layout();
  reload(false).then(function () { scroller.focus(); });
  connect();
})();
`;
