/* Argument structure (CheckWhy): edit the texts, build the reasoning graph, or review structures.
 *
 * Edit mode: stage 1 revises the claim and evidence (add, delete); stage 2 builds steps in a
 * Cytoscape graph (nodes = evidence and the claim, a small dot per step joining its premises to
 * its conclusion) and in an editable list of steps with its compact text form. The check of
 * ConcordArgumentGraph (the mirror of the server's) runs on every change and lists every problem;
 * submission is allowed only when there is none.
 * Review mode: retain / discard with three yes/no criteria, or structures A and B side by side.
 * All dataset text goes through textContent (Cytoscape draws labels on a canvas). */
(function () {
  "use strict";

  const fmt = (text, values) => interpolate(text, values, true);

  const G = window.ConcordArgumentGraph;
  const el = (id) => document.getElementById(id);

  let data, notify, state, cy, reviewGraphs;

  function make(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  // Dataset and typed text: its own direction (dir="auto"), so right-to-left text reads right on
  // any page and left-to-right text on a right-to-left one.
  function auto(node) { node.dir = "auto"; return node; }

  function shorten(text, max) { return text.length > max ? text.slice(0, max - 1).trimEnd() + "…" : text; }

  // --- graph drawing (shared by the editor and the review views) ----------------------------
  const STYLE = [
    { selector: "node", style: {
      "font-family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "font-size": 12, color: "#1d2330",
      label: "data(label)", "text-wrap": "wrap", "text-max-width": 170, "text-valign": "center", "text-halign": "center",
      shape: "round-rectangle", width: 186, height: 62, "background-color": "#ffffff", "border-width": 1, "border-color": "#c7cfdd" } },
    { selector: "node[kind = 'claim']", style: {
      "background-color": "#e8eefc", "border-color": "#2f5bd3", "border-width": 2, "font-weight": 600, width: 240, height: 66, "text-max-width": 220 } },
    { selector: "node[kind = 'missing']", style: { "border-style": "dashed", "border-color": "#b42318", color: "#b42318", height: 34, width: 110 } },
    { selector: "node[kind = 'step']", style: {
      shape: "ellipse", width: 16, height: 16, "background-color": "#8a93a6", "border-width": 0, "font-size": 10, color: "#667085",
      "text-valign": "center", "text-halign": "right", "text-margin-x": 4 } },
    { selector: "node.picked", style: { "border-color": "#2f5bd3", "border-width": 3, "background-color": "#dfe7fb" } },
    { selector: "node.problem", style: { "border-color": "#b42318", "border-width": 2.5 } },
    { selector: "node[kind = 'step'].problem", style: { "background-color": "#b42318" } },
    { selector: "node[kind = 'step'].chosen", style: { "background-color": "#2f5bd3", width: 20, height: 20 } },
    { selector: "edge", style: { width: 1.6, "line-color": "#9aa5bb", "curve-style": "bezier", "target-arrow-color": "#9aa5bb" } },
    { selector: "edge.out", style: { "target-arrow-shape": "triangle", "arrow-scale": 1.1 } },
    { selector: "edge.single", style: {
      label: "data(label)", "font-size": 10, color: "#667085", "text-background-color": "#fbfcfe", "text-background-opacity": 1,
      "text-background-padding": 2 } },
    { selector: "edge.problem", style: { "line-color": "#d9534f", "target-arrow-color": "#d9534f" } },
    { selector: "edge.chosen", style: { "line-color": "#2f5bd3", "target-arrow-color": "#2f5bd3", width: 3 } },
  ];

  const nodeId = (id) => "n_" + id;
  const stepId = (i) => "s_" + i;

  // usedOnly (review views): draw only the statements the structure uses.
  function elements(evidence, steps, claimText, usedOnly) {
    const known = new Set(evidence.map((e) => e.id));
    const used = new Set(steps.flatMap((s) => [...s.premises, s.conclusion]));
    const items = [{ data: { id: nodeId(G.CLAIM), kind: "claim", ref: G.CLAIM, label: gettext("Claim:") + " " + shorten(claimText, 90) } }];
    for (const e of evidence) {
      if (usedOnly && !used.has(e.id)) continue;
      items.push({ data: { id: nodeId(e.id), kind: "evidence", ref: e.id, label: `${e.id}: ${shorten(e.text, 70)}` } });
    }
    const missing = new Set();
    const ensure = (ref) => {
      if (ref === G.CLAIM || known.has(ref) || missing.has(ref) || !ref) return;
      missing.add(ref);
      items.push({ data: { id: nodeId(ref), kind: "missing", ref, label: `${ref}?` } });
    };
    steps.forEach((step, i) => {
      step.premises.forEach(ensure);
      ensure(step.conclusion);
      const label = `S${i + 1}`;
      if (step.premises.length === 1 && step.conclusion) {
        // One premise: a plain arrow (a dot per step would double the depth of the drawing).
        items.push({ data: { id: `e_${i}_single`, source: nodeId(step.premises[0]), target: nodeId(step.conclusion), step: i, label }, classes: "out single" });
        return;
      }
      // Several premises (or an unfinished step): a dot joins them, so that a combined step
      // (E1, E2) -> E3 looks different from two separate steps E1 -> E3 and E2 -> E3.
      items.push({ data: { id: stepId(i), kind: "step", step: i, label } });
      for (const p of step.premises) items.push({ data: { id: `e_${i}_in_${p}`, source: nodeId(p), target: stepId(i), step: i }, classes: "in" });
      if (step.conclusion) items.push({ data: { id: `e_${i}_out`, source: stepId(i), target: nodeId(step.conclusion), step: i }, classes: "out" });
    });
    return items;
  }

  // Layered drawing: the claim on top, each statement one row below what it supports (rows by
  // distance from the claim; a step's dot gets a thin row of its own), rows ordered by their
  // neighbours above to limit crossings. Statements not connected to the claim go to a last row.
  // A big structure is not shrunk below a readable size: it is shown from the top and can be
  // panned. (Cytoscape's breadthfirst layout spaces rows by node width, which wastes height.)
  const MIN_ZOOM = 0.75;
  const GAP_X = 26;
  const GAP_Y = 44;

  function runLayout(graph) {
    if (!graph.width() || !graph.height()) return; // hidden; laid out when shown
    const claim = graph.getElementById(nodeId(G.CLAIM));
    const depth = new Map([[claim.id(), 0]]);
    const queue = [claim];
    while (queue.length) {
      const current = queue.shift();
      current.neighborhood("node").forEach((next) => {
        if (!depth.has(next.id())) { depth.set(next.id(), depth.get(current.id()) + 1); queue.push(next); }
      });
    }
    const deepest = Math.max(...depth.values());
    const order = new Map(graph.nodes().map((n, i) => [n.id(), i]));
    graph.nodes().forEach((n) => { if (!depth.has(n.id())) depth.set(n.id(), deepest + 1); });
    const rows = [];
    graph.nodes().forEach((n) => {
      const d = depth.get(n.id());
      (rows[d] = rows[d] || []).push(n);
    });
    const x = new Map();
    let y = 0;
    let previousHalf = 0;
    graph.batch(() => {
      rows.forEach((row, d) => {
        if (!row) return;
        const key = (n) => {
          const above = n.neighborhood("node").filter((m) => depth.get(m.id()) === d - 1 && x.has(m.id()));
          return above.length ? above.reduce((sum, m) => sum + x.get(m.id()), 0) / above.length : Infinity;
        };
        row.sort((a, b) => key(a) - key(b) || order.get(a.id()) - order.get(b.id()));
        const height = Math.max(...row.map((n) => n.outerHeight()));
        y += d === 0 ? 0 : previousHalf + GAP_Y + height / 2;
        previousHalf = height / 2;
        const width = row.reduce((sum, n) => sum + n.outerWidth(), 0) + GAP_X * (row.length - 1);
        let left = -width / 2;
        for (const n of row) {
          const cx = left + n.outerWidth() / 2;
          n.position({ x: cx, y });
          x.set(n.id(), cx);
          left += n.outerWidth() + GAP_X;
        }
      });
    });
    graph.fit(undefined, 18);
    if (graph.zoom() > 1.1) { graph.zoom(1.1); graph.center(); }
    if (graph.zoom() < MIN_ZOOM) {
      graph.zoom(MIN_ZOOM);
      const box = graph.elements().boundingBox();
      graph.pan({ x: graph.width() / 2 - ((box.x1 + box.x2) / 2) * MIN_ZOOM, y: 18 - box.y1 * MIN_ZOOM });
    }
  }

  function drawGraph(container, evidence, steps, claimText, interactive) {
    const graph = cytoscape({
      container, elements: elements(evidence, steps, claimText, !interactive), style: STYLE,
      wheelSensitivity: 0.3, boxSelectionEnabled: false, autoungrabify: !interactive,
      minZoom: 0.3, maxZoom: 2.5,
    });
    runLayout(graph);
    return graph;
  }

  // --- edit mode: state ---------------------------------------------------------------------
  function structureProblems() {
    return G.checkStructure(state.evidence.map((e) => e.id), state.steps);
  }

  function textProblems() {
    const problems = [];
    if (!state.claim.trim()) problems.push(gettext("The claim text is empty."));
    for (const e of state.evidence) if (!e.text.trim()) problems.push(fmt(gettext("%(id)s has no text: write it or delete it."), { id: e.id }));
    return problems;
  }

  // New evidence never reuses an id of the item's original evidence, even a deleted one, so
  // exports can tell added, deleted and revised statements apart.
  function nextEvidenceId() {
    let highest = 0;
    for (const e of [...state.evidence, ...data.evidence]) {
      const match = /^E(\d+)$/.exec(e.id);
      if (match) highest = Math.max(highest, Number(match[1]));
    }
    let n = highest + 1;
    const ids = new Set([...state.evidence, ...data.evidence].map((e) => e.id));
    while (ids.has("E" + n)) n += 1;
    return "E" + n;
  }

  function parsePremises(text) {
    return text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
  }

  // Structural change: list, graph, compact text and check all follow.
  function structureChanged(options) {
    options = options || {};
    if (!options.keepList) renderSteps();
    renderGraph();
    renderCompact();
    renderProblems();
    notify();
  }

  // --- edit mode: stage 1 -------------------------------------------------------------------
  function renderEvidence() {
    const list = el("as-evidence-list");
    list.replaceChildren();
    state.evidence.forEach((e) => {
      const li = make("li", "as-evidence-item");
      li.dataset.id = e.id;
      const head = make("span", "evidence-id", e.id);
      const original = data.evidence.find((o) => o.id === e.id);
      if (original && original.leaf === true) {
        const tag = make("span", "as-leaf", gettext("leaf"));
        tag.title = gettext("Marked as leaf evidence in the data");
        head.appendChild(tag);
      }
      li.appendChild(head);
      const area = auto(make("textarea"));
      area.rows = 2;
      area.value = e.text;
      area.setAttribute("aria-label", fmt(gettext("Text of %(id)s"), { id: e.id }));
      area.addEventListener("input", () => { e.text = area.value; renderGraph(); renderProblems(); notify(); });
      li.appendChild(area);
      const remove = make("button", "button as-delete", gettext("Delete"));
      remove.type = "button";
      remove.setAttribute("aria-label", fmt(gettext("Delete %(id)s"), { id: e.id }));
      remove.addEventListener("click", () => deleteEvidence(e.id));
      li.appendChild(remove);
      list.appendChild(li);
    });
  }

  function deleteEvidence(id) {
    state.evidence = state.evidence.filter((e) => e.id !== id);
    // Links to it go too; a step that concluded it keeps its premises and waits for a new
    // conclusion, so the check says what is left to fix instead of steps vanishing silently.
    state.steps = state.steps.map((s) => ({
      premises: s.premises.filter((p) => p !== id),
      conclusion: s.conclusion === id ? "" : s.conclusion,
    }));
    state.picked.delete(id);
    renderEvidence();
    structureChanged();
  }

  function addEvidence() {
    const id = nextEvidenceId();
    state.evidence.push({ id, text: "" });
    renderEvidence();
    structureChanged();
    const area = el("as-evidence-list").querySelector(`li[data-id="${id}"] textarea`);
    if (area) area.focus();
  }

  // --- edit mode: stage 2 -------------------------------------------------------------------
  function conclusionOptions(select, current) {
    select.replaceChildren();
    const blank = make("option", "", gettext("choose…"));
    blank.value = "";
    select.appendChild(blank);
    const values = [...state.evidence.map((e) => e.id), G.CLAIM];
    if (current && !values.includes(current)) values.push(current);
    for (const value of values) {
      const option = make("option", "", value === G.CLAIM ? gettext("the claim") : value);
      option.value = value;
      select.appendChild(option);
    }
    select.value = current || "";
  }

  function renderSteps() {
    const list = el("as-steps");
    list.replaceChildren();
    state.steps.forEach((step, i) => {
      const li = make("li", "as-step" + (state.chosenStep === i ? " chosen" : ""));
      li.dataset.step = String(i);
      li.appendChild(make("span", "as-step-name", `S${i + 1}`));
      const premises = auto(make("input", "as-premises"));
      premises.type = "text";
      premises.value = step.premises.join(", ");
      premises.placeholder = "E1, E2";
      premises.setAttribute("aria-label", fmt(gettext("Premises of step %(n)s"), { n: i + 1 }));
      premises.addEventListener("input", () => {
        state.steps[i] = { premises: parsePremises(premises.value), conclusion: state.steps[i].conclusion };
        structureChanged({ keepList: true });
      });
      li.appendChild(premises);
      li.appendChild(make("span", "as-arrow", "→"));
      const select = make("select", "as-step-conclusion");
      select.setAttribute("aria-label", fmt(gettext("Conclusion of step %(n)s"), { n: i + 1 }));
      conclusionOptions(select, step.conclusion);
      select.addEventListener("change", () => {
        state.steps[i] = { premises: state.steps[i].premises, conclusion: select.value };
        structureChanged({ keepList: true });
      });
      li.appendChild(select);
      const remove = make("button", "button as-remove", "×");
      remove.type = "button";
      remove.title = fmt(gettext("Remove step %(n)s"), { n: i + 1 });
      remove.setAttribute("aria-label", remove.title);
      remove.addEventListener("click", () => removeStep(i));
      li.appendChild(remove);
      li.addEventListener("click", (event) => {
        if (event.target === li || event.target.classList.contains("as-step-name")) chooseStep(i);
      });
      list.appendChild(li);
    });
    conclusionOptions(el("as-conclusion"), el("as-conclusion").value);
  }

  function renderCompact() {
    const area = el("as-compact");
    // A compact text with a syntax error stays as typed (and blocks submit) until fixed or undone.
    if (document.activeElement !== area && !state.compactError) {
      area.value = G.toCompact(G.normaliseSteps(state.steps).filter((s) => s.premises.length && s.conclusion));
      el("as-compact-error").textContent = "";
    }
  }

  function renderPicked() {
    el("as-picked").textContent = state.picked.size ? Array.from(state.picked).join(", ") : pgettext("premises", "none");
    if (cy) cy.nodes().forEach((n) => n.toggleClass("picked", state.picked.has(n.data("ref"))));
  }

  function renderGraph() {
    if (!cy) return;
    cy.elements().remove();
    cy.add(elements(state.evidence, state.steps, state.claim));
    if (!el("as-stage-2").hidden) runLayout(cy); // a hidden graph is laid out when shown
    decorateGraph();
  }

  function decorateGraph() {
    if (!cy) return;
    const problems = structureProblems();
    const badNodes = new Set();
    const badSteps = new Set();
    for (const p of problems) {
      p.nodes.forEach((n) => badNodes.add(n));
      if (p.step !== null) badSteps.add(p.step);
    }
    cy.nodes().forEach((n) => {
      const kind = n.data("kind");
      if (kind === "step") {
        n.toggleClass("problem", badSteps.has(n.data("step")));
        n.toggleClass("chosen", state.chosenStep === n.data("step"));
      } else {
        n.toggleClass("problem", badNodes.has(n.data("ref")) || kind === "missing");
      }
    });
    cy.edges().forEach((e) => {
      e.toggleClass("problem", badSteps.has(e.data("step")));
      e.toggleClass("chosen", state.chosenStep === e.data("step"));
    });
    renderPicked();
  }

  function renderProblems() {
    const list = el("as-problems");
    list.replaceChildren();
    const problems = structureProblems();
    if (!problems.length) {
      list.appendChild(make("li", "ok", gettext("The structure is well formed: every statement leads to the claim.")));
    }
    for (const p of problems) {
      const li = make("li", "as-problem", p.message);
      li.dataset.code = p.code;
      list.appendChild(li);
    }
    const count = problems.length + textProblems().length;
    el("as-tab-count").textContent = count ? fmt(gettext("(%(count)s to fix)"), { count }) : "✓";
    el("as-tab-count").className = "as-count " + (count ? "bad" : "good");
    decorateGraph();
  }

  function addStep(premises, conclusion) {
    state.steps.push({ premises: Array.from(premises), conclusion });
    state.picked.clear();
    state.chosenStep = null;
    structureChanged();
  }

  function removeStep(i) {
    state.steps.splice(i, 1);
    state.chosenStep = null;
    structureChanged();
    // The focus goes to the next step's remove button (or the last one, or "Add step"), not to
    // the top of the page.
    const buttons = el("as-steps").querySelectorAll(".as-remove");
    const next = buttons[Math.min(i, buttons.length - 1)] || el("as-add-step");
    if (next) next.focus({ preventScroll: true });
  }

  function chooseStep(i) {
    state.chosenStep = state.chosenStep === i ? null : i;
    el("as-steps").querySelectorAll(".as-step").forEach((li) => li.classList.toggle("chosen", Number(li.dataset.step) === state.chosenStep));
    decorateGraph();
  }

  function conclude(ref) {
    if (!state.picked.size) {
      banner(gettext("Choose the premises first (click them), then the conclusion."));
      return;
    }
    addStep(state.picked, ref);
  }

  function banner(text) { el("as-compact-error").textContent = text; }

  function togglePick(ref) {
    if (state.picked.has(ref)) state.picked.delete(ref); else state.picked.add(ref);
    renderPicked();
  }

  function setupEditorGraph() {
    cy = drawGraph(el("as-graph"), state.evidence, state.steps, state.claim, true);
    // Double clicks are detected here: Cytoscape's dbltap also fires for two quick taps on
    // different nodes, which would turn "pick E1, pick E2" into a step E1 -> E2.
    let lastTap = null;
    cy.on("tap", "edge", (event) => chooseStep(event.target.data("step")));
    cy.on("tap", "node", (event) => {
      const n = event.target;
      const kind = n.data("kind");
      if (kind === "step") { chooseStep(n.data("step")); return; }
      const ref = n.data("ref");
      const shift = event.originalEvent && event.originalEvent.shiftKey;
      const now = Date.now();
      const double = lastTap !== null && lastTap.ref === ref && now - lastTap.time < 400;
      lastTap = { ref, time: now };
      if (ref === G.CLAIM) {
        if (state.picked.size) conclude(G.CLAIM);
        else banner(gettext("The claim can only be a conclusion: choose premises first."));
        return;
      }
      if (double) {
        lastTap = null;
        state.picked.delete(ref); // the first click of the double click picked it
        conclude(ref);
      } else if (shift) {
        conclude(ref);
      } else {
        togglePick(ref);
      }
    });
    decorateGraph();
  }

  function showStage(stage) {
    state.stage = stage;
    el("as-stage-1").hidden = stage !== 1;
    el("as-stage-2").hidden = stage !== 2;
    el("as-tab-1").setAttribute("aria-selected", String(stage === 1));
    el("as-tab-2").setAttribute("aria-selected", String(stage === 2));
    if (stage === 2 && cy) { cy.resize(); runLayout(cy); decorateGraph(); }
  }

  function mountEdit(answer) {
    const from = answer && Array.isArray(answer.steps) ? answer : null;
    state = {
      stage: 1,
      claim: from && typeof from.claim === "string" ? from.claim : data.claim,
      evidence: (from && Array.isArray(from.evidence) ? from.evidence : data.evidence).map((e) => ({ id: e.id, text: e.text })),
      steps: (from ? from.steps : data.draft || []).map((s) => ({ premises: [...s.premises], conclusion: s.conclusion })),
      picked: new Set(),
      chosenStep: null,
      compactError: null,
      notCausal: Boolean(from && from.invalid_causal_relation),
    };
    history = { snapshots: [snapshot()], at: 0 };
    const notCausal = el("as-not-causal");
    notCausal.checked = state.notCausal;
    notCausal.onchange = () => { state.notCausal = notCausal.checked; notify(); };
    el("as-edit").hidden = false;
    el("as-review").hidden = true;
    const claimInput = el("as-claim-input");
    claimInput.value = state.claim;
    claimInput.oninput = () => { state.claim = claimInput.value; renderGraph(); renderProblems(); notify(); };
    renderEvidence();
    el("as-add-evidence").onclick = addEvidence;
    el("as-next").onclick = () => showStage(2);
    el("as-tab-1").onclick = () => showStage(1);
    el("as-tab-2").onclick = () => showStage(2);
    el("as-add-step").onclick = () => {
      state.steps.push({ premises: [], conclusion: "" });
      structureChanged();
      const inputs = el("as-steps").querySelectorAll(".as-premises");
      if (inputs.length) inputs[inputs.length - 1].focus();
    };
    el("as-link").onclick = () => {
      const target = el("as-conclusion").value;
      if (!target) { banner(gettext("Choose the conclusion of the new step.")); return; }
      conclude(target);
    };
    el("as-clear").onclick = () => { state.picked.clear(); renderPicked(); };
    el("as-layout").onclick = () => { if (cy) runLayout(cy); };
    el("as-compact").oninput = () => {
      try {
        state.steps = G.parseCompact(el("as-compact").value);
        state.compactError = null;
        el("as-compact-error").textContent = "";
        state.chosenStep = null;
        structureChanged();
      } catch (error) {
        if (!(error instanceof G.StructureSyntaxError)) throw error;
        state.compactError = error.message;
        el("as-compact-error").textContent = gettext("Compact form:") + " " + error.message;
        notify();
      }
    };
    el("as-compact").onblur = renderCompact;
    if (cy) { cy.destroy(); cy = null; }
    setupEditorGraph();
    renderSteps();
    renderCompact();
    renderProblems();
    showStage(from ? 2 : 1); // new work starts with the texts; a saved answer reopens on the structure
  }

  // --- undo and redo (edit mode): a snapshot of the texts and steps after every change ---------
  let history = null;

  function snapshot() {
    return JSON.stringify({ claim: state.claim, evidence: state.evidence, steps: state.steps });
  }

  function remember() {
    if (!history || data.mode !== "edit") return;
    const now = snapshot();
    if (now === history.snapshots[history.at]) return;
    history.snapshots = history.snapshots.slice(0, history.at + 1);
    history.snapshots.push(now);
    if (history.snapshots.length > 200) history.snapshots.shift();
    history.at = history.snapshots.length - 1;
  }

  function travel(step) {
    const to = history.at + step;
    if (to < 0 || to >= history.snapshots.length) return;
    history.at = to;
    const saved = JSON.parse(history.snapshots[to]);
    state.claim = saved.claim;
    state.evidence = saved.evidence;
    state.steps = saved.steps;
    state.compactError = null;
    state.chosenStep = null;
    state.picked.clear();
    el("as-claim-input").value = state.claim;
    renderEvidence();
    renderPicked();
    el("as-compact").blur();
    structureChanged();
  }

  // --- review mode ----------------------------------------------------------------------------
  const YES = [pgettext("review answer", "yes"), true], NO = [pgettext("review answer", "no"), false];
  const TIE = [pgettext("review answer", "tie"), "tie"];
  const CHOICES = {
    faithfulness: [YES, NO],
    fluency: [YES, NO],
    validity: [YES, NO],
    validity_a: [[pgettext("review answer", "valid"), true], [pgettext("review answer", "not valid"), false]],
    validity_b: [[pgettext("review answer", "valid"), true], [pgettext("review answer", "not valid"), false]],
    decision: [[pgettext("review answer", "retain"), "retain"], [pgettext("review answer", "discard"), "discard"]],
    preference: [[gettext("A is better"), "A"], TIE, [gettext("B is better"), "B"]],
  };
  // CheckWhy's protocol: the generated structure (A) beside the provided reference (B), labelled.
  const AGAINST_REFERENCE = {
    validity_a: [YES, NO],
    preference: [[gettext("generated is better (win)"), "A"], TIE, [gettext("reference is better (lose)"), "B"]],
  };

  function againstReference() {
    return data.review === "compare" && data.comparison === "reference";
  }

  function choicesFor(field) {
    return (againstReference() && AGAINST_REFERENCE[field]) || CHOICES[field];
  }

  function reviewFields() {
    if (data.review !== "compare") return ["faithfulness", "fluency", "validity", "decision"];
    return againstReference() ? ["validity_a", "preference"] : ["validity_a", "validity_b", "preference"];
  }

  function labelComparison() {
    const open = againstReference();
    el("as-title-a").textContent = open ? gettext("Generated structure") : gettext("Structure A");
    el("as-title-b").textContent = open ? gettext("Reference structure (provided)") : gettext("Structure B");
    el("as-graph-a").setAttribute("aria-label", el("as-title-a").textContent);
    el("as-graph-b").setAttribute("aria-label", el("as-title-b").textContent);
    el("as-ask-a").textContent = open ? gettext("Is the generated argument structure logically coherent?") : gettext("Is structure A valid?");
    el("as-ask-preference").textContent = open
      ? gettext("Compared with the reference, is the generated structure better, as good, or worse?")
      : gettext("Which structure explains the claim better?");
    document.querySelector("#as-compare [data-field='validity_b']").hidden = open;
  }

  function renderQuestions(container) {
    container.querySelectorAll(".as-question").forEach((question) => {
      const field = question.dataset.field;
      question.querySelectorAll(".as-options").forEach((n) => n.remove());
      const options = make("div", "as-options");
      options.setAttribute("role", "radiogroup");
      for (const [text, value] of choicesFor(field)) {
        const button = make("button", "as-choice", text);
        button.type = "button";
        button.setAttribute("role", "radio");
        button.dataset.field = field;
        button.dataset.value = JSON.stringify(value);
        button.addEventListener("click", () => { state.review[field] = value; paintQuestions(); notify(); });
        options.appendChild(button);
      }
      question.appendChild(options);
    });
    paintQuestions();
  }

  function paintQuestions() {
    el("as-review").querySelectorAll(".as-choice").forEach((button) => {
      const chosen = state.review[button.dataset.field];
      button.setAttribute("aria-checked", String(chosen !== undefined && JSON.stringify(chosen) === button.dataset.value));
    });
  }

  function evidenceView(list) {
    list.replaceChildren();
    for (const e of data.evidence) {
      const li = make("li");
      li.appendChild(make("span", "evidence-id", e.id));
      li.appendChild(auto(make("span", "evidence-text", e.text)));
      list.appendChild(li);
    }
  }

  function mountReview(answer) {
    state = { review: {} };
    for (const field of reviewFields()) if (answer && answer[field] !== undefined) state.review[field] = answer[field];
    el("as-edit").hidden = true;
    el("as-review").hidden = false;
    el("as-filter").hidden = data.review !== "filter";
    el("as-compare").hidden = data.review !== "compare";
    (reviewGraphs || []).forEach((g) => g.destroy());
    reviewGraphs = [];
    if (data.review === "filter") {
      evidenceView(el("as-filter-evidence"));
      el("as-filter-compact").textContent = G.toCompact(data.structure);
      reviewGraphs.push(drawGraph(el("as-filter-graph"), data.evidence, data.structure, data.claim, false));
      renderQuestions(el("as-filter"));
    } else {
      evidenceView(el("as-compare-evidence"));
      labelComparison();
      for (const side of ["a", "b"]) {
        const steps = data.structures[side.toUpperCase()];
        el("as-compact-" + side).textContent = G.toCompact(steps);
        reviewGraphs.push(drawGraph(el("as-graph-" + side), data.evidence, steps, data.claim, false));
      }
      renderQuestions(el("as-compare"));
    }
  }

  // Review keys: 1, 2, 3 choose an option of the first question still open (in page order).
  function reviewKey(event) {
    if (event.ctrlKey || event.metaKey || !/^[1-3]$/.test(event.key)) return false;
    const field = reviewFields().find((f) => state.review[f] === undefined);
    if (!field) return false;
    const option = choicesFor(field)[Number(event.key) - 1];
    if (!option) return false;
    state.review[field] = option[1];
    paintQuestions();
    notify();
    return true;
  }

  Concord.tasks.argument_structure = {
    mount(container, item, answer, config, onChange) {
      data = item;
      history = null;
      notify = () => { remember(); onChange(); };
      el("as-claim").textContent = item.claim;
      el("as-label").textContent = item.label;
      el("as-cause").textContent = item.cause || "–";
      el("as-effect").textContent = item.effect || "–";
      if (item.mode === "edit") mountEdit(answer); else mountReview(answer);
    },

    answer() {
      if (data.mode === "edit") {
        return {
          claim: state.claim,
          evidence: state.evidence.map((e) => ({ id: e.id, text: e.text })),
          steps: state.steps.map((s) => ({ premises: [...s.premises], conclusion: s.conclusion })),
          invalid_causal_relation: state.notCausal,
        };
      }
      return { ...state.review };
    },

    problem() {
      if (data.mode === "edit") {
        if (state.notCausal) return null; // a discarded claim needs no structure
        if (state.compactError) return fmt(gettext("The compact form has a syntax error (%(error)s): fix it or undo (Ctrl+Z)."), { error: state.compactError });
        const text = textProblems();
        if (text.length) return text[0];
        const problems = structureProblems();
        if (!problems.length) return null;
        const more = problems.length > 1 ? " " + fmt(gettext("(and %(count)s more: see the check)"), { count: problems.length - 1 }) : "";
        return problems[0].message + more;
      }
      const labels = {
        faithfulness: gettext("Answer faithfulness."), fluency: gettext("Answer fluency."), validity: gettext("Answer validity."),
        decision: gettext("Answer retain or discard."), validity_a: gettext("Answer the validity of structure A."),
        validity_b: gettext("Answer the validity of structure B."), preference: gettext("Answer which structure is better."),
      };
      if (againstReference()) {
        Object.assign(labels, { validity_a: gettext("Answer the validity of the generated structure."), preference: gettext("Answer win, tie or lose.") });
      }
      const missing = reviewFields().find((f) => state.review[f] === undefined);
      return missing ? labels[missing] : null;
    },

    key(event) {
      if (data.mode === "review") return reviewKey(event);
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "z") { travel(event.shiftKey ? 1 : -1); return true; }
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "y") { travel(1); return true; }
      if (event.ctrlKey || event.metaKey) return false;
      if (data.mode !== "edit" || state.stage !== 2) return false;
      if ((event.key === "Delete" || event.key === "Backspace") && state.chosenStep !== null) {
        removeStep(state.chosenStep);
        return true;
      }
      if (event.key === "Escape") { state.picked.clear(); state.chosenStep = null; renderPicked(); decorateGraph(); return true; }
      return false;
    },

    graph() { return cy; }, // the editor's Cytoscape instance (browser tests locate nodes with it)
  };
})();
