// The answer audit page's word panel: hover a word of the answer (or focus or click it) to see
// the sentences that support it beside their document text, the graph paths that brought each
// source in, and the scores. Everything is built with textContent: no data is parsed as HTML.
(function () {
  "use strict";
  const dataNode = document.getElementById("audit-data");
  const answer = document.getElementById("answer-text");
  const panel = document.getElementById("token-panel");
  if (!dataNode || !answer || !panel) return;
  const data = JSON.parse(dataNode.textContent);
  const sources = new Map(data.sources.map((s) => [s.number, s]));
  let pinned = null;
  let shown = null;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function score(value) {
    return value === null || value === undefined ? "—" : Number(value).toFixed(3);
  }

  function scoreRow(table, label, values) {
    const row = table.insertRow();
    row.appendChild(el("th", "", label));
    values.forEach((value) => row.appendChild(el("td", "", value)));
  }

  function scores(support, source) {
    const wrap = el("div", "score-tables");
    const token = el("table", "scores");
    const head = token.createTHead().insertRow();
    head.appendChild(el("th", "", "word → sentence"));
    head.appendChild(el("th", "", "fast"));
    if (data.exact) head.appendChild(el("th", "", "exact"));
    const values = [score(support.fast)];
    if (data.exact) values.push(score(support.exact));
    scoreRow(token, "score", values);
    const s = source.scores || {};
    const retrieval = el("table", "scores");
    const title = retrieval.createTHead().insertRow().appendChild(el("th", "", "source [" + support.number + "]"));
    title.colSpan = 2;
    scoreRow(retrieval, "seed", [score(s.seed)]);
    scoreRow(retrieval, "rerank", [score(s.rerank)]);
    scoreRow(retrieval, "graph support", [score(s.graph_support)]);
    wrap.appendChild(token);
    wrap.appendChild(retrieval);
    return wrap;
  }

  function context(support, source) {
    const box = el("div", "context");
    const text = source.text || "";
    box.appendChild(document.createTextNode(text.slice(0, support.start)));
    const mark = el("mark", "", text.slice(support.start, support.end));
    box.appendChild(mark);
    box.appendChild(document.createTextNode(text.slice(support.end)));
    return [box, mark];
  }

  function paths(source) {
    if (!source.paths.length) return el("p", "meta", "Found by vector search alone (no graph path).");
    const list = el("ol", "paths");
    source.paths.forEach((path) => {
      const item = el("li");
      path.steps.forEach((step) => {
        if (step.kind === "rel") item.appendChild(el("span", "rel", " —" + step.label + "— "));
        else item.appendChild(el("span", "node", step.label));
      });
      item.appendChild(el("small", "", " (path score " + score(path.score) + ")"));
      list.appendChild(item);
    });
    return list;
  }

  function supportCard(support) {
    const source = sources.get(support.number);
    const card = el("section", "support");
    const title = el("h4");
    const link = el("a", "", "[" + support.number + "]");
    link.href = "#source-" + support.number;
    title.appendChild(el("span", "swatch src-" + ((support.number - 1) % 10)));
    title.appendChild(document.createTextNode(" "));
    title.appendChild(link);
    const where = support.column ? "column " + support.column : "sentence " + (support.sentence + 1);
    const label = " " + (source ? source.document : "") + " · " + where;
    title.appendChild(document.createTextNode(label));
    card.appendChild(title);
    if (!source) return [card, null, null];
    const grid = el("div", "support-grid");
    const left = el("div");
    left.appendChild(el("blockquote", "sentence", (source.text || "").slice(support.start, support.end)));
    left.appendChild(scores(support, source));
    const [box, mark] = context(support, source);
    grid.appendChild(left);
    grid.appendChild(box);
    card.appendChild(grid);
    card.appendChild(paths(source));
    return [card, box, mark];
  }

  function show(span) {
    const token = data.tokens[Number(span.dataset.token)];
    if (!token || token === shown) return;
    shown = token;
    answer.querySelectorAll(".tok.active").forEach((t) => t.classList.remove("active"));
    answer.querySelectorAll('.tok[data-token="' + token.index + '"]').forEach((t) => t.classList.add("active"));
    panel.replaceChildren();
    panel.appendChild(el("h3", "", "“" + token.text.trim() + "”"));
    if (!token.supports.length) {
      panel.appendChild(el("p", "hint", "No source supports this word."));
      return;
    }
    token.supports.forEach((support) => {
      const [card, box, mark] = supportCard(support);
      panel.appendChild(card);
      // The context box is positioned, so the mark's offsetTop is measured inside it.
      if (box && mark) box.scrollTop = Math.max(0, mark.offsetTop - 24);
    });
  }

  function tokenOf(event) {
    return event.target instanceof Element ? event.target.closest(".tok") : null;
  }

  answer.addEventListener("mouseover", (event) => {
    const span = tokenOf(event);
    if (span && !pinned) show(span);
  });
  answer.addEventListener("focusin", (event) => {
    const span = tokenOf(event);
    if (span) {
      pinned = span;
      show(span);
    }
  });
  answer.addEventListener("click", (event) => {
    const span = tokenOf(event);
    if (span) {
      pinned = span;
      show(span);
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") pinned = null;
  });
})();
