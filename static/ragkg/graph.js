// The graph explorer (/graph/, templates/core/graph.html): draws an entity's neighbourhood or an answer's
// paths with cytoscape.js (static/vendor/cytoscape, copied by scripts/bootstrap.sh) from the JSON endpoints
// under /graph/api/. Click an entity to expand it and list the units that mention it; hover for names and
// evidence; the checkboxes hide entity types and relation kinds. Every text goes in as text, never as HTML.
// Without JavaScript (or without the library) the page's plain lists stay as they are.
(function () {
  "use strict";

  const PALETTE = ["#2856b6", "#1b7f3b", "#b45309", "#7c3aed", "#be123c", "#0e7490", "#4d7c0f", "#a21caf"];

  function colour(type) {
    let h = 0;
    for (const c of type || "") h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return PALETTE[h % PALETTE.length];
  }

  function short(text, limit) {
    const t = (text || "").replace(/\s+/g, " ").trim();
    return t.length <= limit ? t : t.slice(0, limit - 1) + "…";
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  function withCollections(url, collections) {
    if (!collections) return url;
    const query = collections.split(",").map((c) => "collections=" + encodeURIComponent(c)).join("&");
    return url + (url.includes("?") ? "&" : "?") + query;
  }

  function Explorer(root) {
    this.root = root;
    this.collections = root.dataset.collections || "";
    this.caps = { nodes: 60, edges: 150 };
    this.capped = false;
    this.hiddenTypes = new Set();
    this.hiddenKinds = new Set();
    this.tooltip = root.querySelector("#graph-tooltip");
    this.count = root.querySelector("#graph-count");
    root.querySelector(".graph-tools").hidden = false;
    this.cy = window.cytoscape({
      container: root.querySelector("#graph-canvas"),
      minZoom: 0.2,
      maxZoom: 2,
      style: [
        {
          selector: "node",
          style: {
            label: "data(short)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 4,
            "background-color": "data(colour)", width: 22, height: 22, color: "#1d2330",
            "text-wrap": "ellipsis", "text-max-width": 140,
          },
        },
        { selector: "node[label != 'Entity']", style: { shape: "round-rectangle", "background-color": "#9aa3b2", width: 30, height: 18 } },
        { selector: "node.center", style: { "border-width": 4, "border-color": "#1d2330", width: 30, height: 30 } },
        { selector: "node.source", style: { "border-width": 4, "border-color": "#f59e0b", "background-color": "#fde68a" } },
        { selector: "node.expanded", style: { "border-width": 2, "border-color": "#1d2330" } },
        {
          selector: "edge",
          style: {
            width: 1.5, "line-color": "#b8bfcc", "target-arrow-color": "#b8bfcc", "target-arrow-shape": "triangle",
            "curve-style": "bezier", label: "data(kind)", "font-size": 9, color: "#5b6474",
            "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.8,
          },
        },
        { selector: "edge[type = 'SYNONYM']", style: { "line-style": "dashed", "target-arrow-shape": "none" } },
        { selector: ".filtered", style: { display: "none" } },
        { selector: ":selected", style: { "overlay-color": "#2856b6", "overlay-opacity": 0.15 } },
      ],
    });
    window.ragkgExplorer = this;
    this.cy.on("tap", "node[label = 'Entity']", (event) => this.expand(event.target.id()));
    this.cy.on("mouseover", "node, edge", (event) => this.hover(event));
    this.cy.on("mouseout", "node, edge", () => { this.tooltip.hidden = true; });
  }

  Explorer.prototype.fetch = async function (url) {
    const response = await fetch(withCollections(url, this.collections), { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(response.status === 404 ? "not found" : "the server answered " + response.status);
    return response.json();
  };

  Explorer.prototype.urlFor = function (name, id) {
    return this.root.dataset[name].replace("__id__", encodeURIComponent(id));
  };

  Explorer.prototype.add = function (data, near) {
    const first = this.cy.nodes().empty();
    if (data.caps) this.caps = data.caps;
    if (data.truncated) this.capped = true;
    const added = [];
    for (const node of data.nodes || []) {
      if (this.cy.getElementById(node.id).nonempty()) continue;
      if (this.cy.nodes().length >= this.caps.nodes) { this.capped = true; break; }
      const classes = [node.center ? "center" : "", node.source ? "source" : ""].join(" ").trim();
      const name = node.label === "Entity" ? node.name : (node.number ? "[" + node.number + "] " : "") + node.name;
      const at = near || { x: 0, y: 0 };
      added.push(this.cy.add({
        group: "nodes",
        classes: classes,
        position: { x: at.x + (Math.random() - 0.5) * 120, y: at.y + (Math.random() - 0.5) * 120 },
        data: { ...node, short: short(name, 28), colour: node.label === "Entity" ? colour(node.type) : "#9aa3b2" },
      }));
    }
    for (const edge of data.edges || []) {
      if (this.cy.getElementById(edge.id).nonempty()) continue;
      if (this.cy.getElementById(edge.source).empty() || this.cy.getElementById(edge.target).empty()) continue;
      if (this.cy.edges().length >= this.caps.edges) { this.capped = true; break; }
      this.cy.add({ group: "edges", data: { ...edge } });
    }
    this.refreshFilters();
    this.layout(added.length > 0, first);
  };

  Explorer.prototype.layout = function (changed, first) {
    if (!changed) { this.update(); return; }
    this.cy.layout({ name: "cose", animate: false, randomize: first, nodeRepulsion: () => 9000, idealEdgeLength: () => 90 }).run();
    this.cy.fit(undefined, 30);
    this.update();
  };

  Explorer.prototype.checkbox = function (fieldset, value, hidden) {
    if (fieldset.querySelector('input[value="' + CSS.escape(value) + '"]')) return;
    const id = fieldset.id + "-" + fieldset.querySelectorAll("input").length;
    const box = el("input", { type: "checkbox", id: id, value: value });
    box.checked = true;
    box.addEventListener("change", () => {
      if (box.checked) hidden.delete(value); else hidden.add(value);
      this.update();
    });
    fieldset.append(el("span", { class: "choice" }, box, " ", el("label", { for: id }, value || "(none)")));
  };

  Explorer.prototype.refreshFilters = function () {
    const types = this.root.querySelector("#graph-types");
    const kinds = this.root.querySelector("#graph-relations");
    this.cy.nodes("[label = 'Entity']").forEach((n) => this.checkbox(types, n.data("type") || "", this.hiddenTypes));
    this.cy.edges().forEach((e) => this.checkbox(kinds, e.data("kind") || "", this.hiddenKinds));
  };

  Explorer.prototype.update = function () {
    this.tooltip.hidden = true;
    this.cy.batch(() => {
      this.cy.nodes().forEach((n) => {
        const hide = n.data("label") === "Entity" && !n.hasClass("center") && this.hiddenTypes.has(n.data("type") || "");
        n.toggleClass("filtered", hide);
      });
      this.cy.edges().forEach((e) => {
        const hide = this.hiddenKinds.has(e.data("kind") || "") || e.source().hasClass("filtered") || e.target().hasClass("filtered");
        e.toggleClass("filtered", hide);
      });
    });
    const nodes = this.cy.nodes().not(".filtered").length;
    const edges = this.cy.edges().not(".filtered").length;
    this.count.textContent = nodes + " node" + (nodes === 1 ? "" : "s") + ", " + edges + " edge" + (edges === 1 ? "" : "s") + " shown";
    this.root.querySelector("#graph-cap").textContent = this.caps.nodes + " nodes, " + this.caps.edges + " edges";
    this.root.querySelector("#graph-capped").hidden = !this.capped;
  };

  Explorer.prototype.message = function (text) {
    this.count.textContent = text;
  };

  Explorer.prototype.expand = async function (id) {
    const node = this.cy.getElementById(id);
    try {
      const [graph, units] = await Promise.all([
        node.hasClass("expanded") ? Promise.resolve({ nodes: [], edges: [] }) : this.fetch(this.urlFor("neighbourhoodUrlTemplate", id)),
        this.fetch(this.urlFor("unitsUrlTemplate", id)),
      ]);
      node.addClass("expanded");
      this.add({ ...graph, caps: graph.caps || this.caps }, { ...node.position() });
      this.showUnits(units);
    } catch (error) {
      this.message("Could not load " + (node.data("name") || "the entity") + ": " + error.message);
    }
  };

  Explorer.prototype.hover = function (event) {
    const target = event.target;
    const data = target.data();
    let lines;
    if (target.isNode()) {
      lines = data.label === "Entity"
        ? [data.name, [data.type, data.mentions !== undefined ? data.mentions + " mentions" : ""].filter(Boolean).join(" · ")]
        : [data.label.toLowerCase() + (data.source ? " · source [" + data.number + "]" : "") + " · " + (data.document || ""), short(data.name, 200)];
    } else {
      const ends = short(target.source().data("name"), 40) + " —" + data.kind + "→ " + short(target.target().data("name"), 40);
      const facts = [data.status, data.documents !== undefined ? data.documents + " documents" : ""].filter(Boolean).join(" · ");
      lines = [ends, facts, data.evidence ? "“" + data.evidence + "”" : ""];
    }
    this.tooltip.replaceChildren(...lines.filter(Boolean).map((line) => el("span", {}, line)));
    const box = this.root.querySelector("#graph-canvas").getBoundingClientRect();
    const at = event.renderedPosition || { x: 0, y: 0 };
    this.tooltip.style.left = Math.round(box.left + window.scrollX + at.x + 12) + "px";
    this.tooltip.style.top = Math.round(box.top + window.scrollY + at.y + 12) + "px";
    this.tooltip.hidden = false;
  };

  Explorer.prototype.showUnits = function (data) {
    const panel = this.root.querySelector("#graph-units");
    const entity = data.entity || {};
    const links = el("p", { class: "meta" }, el("a", { href: withCollections(data.links.explore, this.collections) }, "Explore from " + entity.name));
    if (data.links.curation) links.append(" · ", el("a", { href: data.links.curation }, "Curate " + entity.name));
    const more = data.total > data.limit ? " (the first " + data.limit + ")" : "";
    const list = el("ul");
    for (const unit of data.units) {
      const item = el("li", {}, el("span", { class: "meta" }, [unit.label.toLowerCase(), unit.document.title, unit.document.collection].join(" · ")));
      if (unit.thumb) item.append(el("a", { href: unit.full }, el("img", { src: unit.thumb, alt: short(unit.text, 120), loading: "lazy" })));
      const summary = el("summary", {}, unit.before, el("mark", {}, unit.mention), unit.after);
      item.append(el("details", {}, summary, el("p", { class: "unit-text" }, unit.text)));
      list.append(item);
    }
    panel.replaceChildren(el("h3", {}, entity.name + ": mentioned in " + data.total + " unit" + (data.total === 1 ? "" : "s") + more), links, list);
  };

  async function start() {
    const root = document.getElementById("graph-explorer");
    if (!root || typeof window.cytoscape !== "function") return;
    const explorer = new Explorer(root);
    try {
      if (root.dataset.entity) {
        const data = await explorer.fetch(root.dataset.neighbourhoodUrl);
        explorer.add(data);
        explorer.cy.getElementById(root.dataset.entity).addClass("expanded");
      } else if (root.dataset.answerUrl) {
        explorer.add(await explorer.fetch(root.dataset.answerUrl));
      }
      root.dataset.ready = "true";
    } catch (error) {
      explorer.message("Could not load the graph: " + error.message);
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
