/* Claim review (FaStfact protocol), two screens:
 *   1. Revise: keep, revise (original stays visible) or remove (reason required) each extracted
 *      claim; "Add claim here" inserts a missing claim at that place in response order. Selecting a
 *      claim highlights the response sentence it most likely comes from (best-effort match made on
 *      the server).
 *   2. Verify: every kept, revised or added claim with the system's label, reasoning and evidence
 *      passages (collapsible, with source titles); agree, or disagree and choose the correct label.
 *      A search link opens a web search for the claim in a new tab (project setting; may be off).
 * Claims still missing a decision are marked, and submit stays disabled until none is left.
 * Keys: ↑/↓ select; revise: k keep, r revise, x remove, 1/2 removal reason; verify: a agree,
 * d disagree, 1–5 label. All dataset text goes through textContent. */
(function () {
  "use strict";

  const fmt = (text, values) => interpolate(text, values, true);
  // The protocol's words as the annotator reads them; the values sent stay the protocol's.
  const REASON_NAMES = { "redundant": pgettext("removal reason", "Redundant"), "not a claim": pgettext("removal reason", "Not a claim") };
  const LABEL_NAMES = {
    "supported": pgettext("claim label", "supported"),
    "refuted": pgettext("claim label", "refuted"),
    "conflicting evidence": pgettext("claim label", "conflicting evidence"),
    "not enough evidence": pgettext("claim label", "not enough evidence"),
    "irrelevant": pgettext("claim label", "irrelevant"),
    "unsupported": pgettext("claim label", "unsupported"),
  };
  const labelName = (label) => LABEL_NAMES[label] || label;
  let item, config, notify, entries, screen, selected, nextNew;

  const el = (id) => document.getElementById(id);

  function make(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }
  // Dataset and typed text: its own direction (dir="auto"), so right-to-left text reads right on
  // any page and left-to-right text on a right-to-left one.
  function auto(node) { node.dir = "auto"; return node; }

  function button(text, className, onClick, pressed) {
    const b = make("button", "button " + (className || ""), text);
    b.type = "button";
    if (pressed !== undefined) b.setAttribute("aria-pressed", String(!!pressed));
    b.addEventListener("click", (event) => { event.stopPropagation(); onClick(); });
    return b;
  }

  // --- state -------------------------------------------------------------------------------
  function fromAnswer(answer) {
    const originals = item.claims;
    const byId = new Map(originals.map((c) => [c.id, c]));
    const saved = answer && Array.isArray(answer.claims) ? answer.claims : [];
    const result = [];
    const used = new Set();
    let next = 0; // originals before a saved original that the saved answer lacks are restored
    for (const d of saved) {
      if (!d || typeof d.id !== "string" || used.has(d.id)) continue;
      const original = byId.get(d.id);
      if (original) {
        const at = originals.indexOf(original);
        if (at < next) continue; // out of order: ignore, the default entry comes back below
        for (; next < at; next++) if (!used.has(originals[next].id)) { result.push(fresh(originals[next])); used.add(originals[next].id); }
        next = at + 1;
      } else if (d.action !== "add") continue;
      used.add(d.id);
      result.push({
        id: d.id,
        original: original || null,
        action: original ? (["keep", "revise", "remove"].includes(d.action) ? d.action : "keep") : "add",
        text: typeof d.text === "string" ? d.text : (original ? original.text : ""),
        reason: d.reason || null,
        agreement: d.agreement || null,
        label: d.label || null,
      });
    }
    for (; next < originals.length; next++) if (!used.has(originals[next].id)) result.push(fresh(originals[next]));
    return result;
  }

  function fresh(claim) {
    return { id: claim.id, original: claim, action: "keep", text: claim.text, reason: null, agreement: null, label: null };
  }

  function verifying(entry) { return entry.action !== "remove"; }
  function shownText(entry) { return entry.action === "keep" ? entry.original.text : entry.text; }
  function labelsOf(entry) { return entry.original ? entry.original.labels : item.added_labels; }

  /* What one claim still lacks, or null; ``screen`` says where it is fixed. */
  function problemOf(entry) {
    const text = (entry.text || "").trim();
    if (entry.action === "remove") {
      return item.removal_reasons.includes(entry.reason) ? null : { screen: "revise", text: gettext("choose why it is removed") };
    }
    if (entry.action === "add" && !text) return { screen: "revise", text: gettext("write the added claim") };
    if (entry.action === "revise" && !text) return { screen: "revise", text: gettext("write the revised claim") };
    if (entry.action === "revise" && text === entry.original.text.trim()) {
      return { screen: "revise", text: gettext("the revision equals the original: keep it instead") };
    }
    if (entry.action === "add") {
      return labelsOf(entry).includes(entry.label) ? null : { screen: "verify", text: gettext("choose its label") };
    }
    if (entry.agreement === "agree") return null;
    if (entry.agreement === "disagree") {
      if (entry.label && entry.label === entry.original.system_label) {
        return { screen: "verify", text: gettext("choose a label other than the system's") };
      }
      return labelsOf(entry).includes(entry.label) ? null : { screen: "verify", text: gettext("choose the correct label") };
    }
    return { screen: "verify", text: gettext("agree or disagree") };
  }

  function changed(rerender) {
    if (rerender) render(); else paint();
    notify();
  }

  function setAction(index, action) {
    const entry = entries[index];
    if (entry.action === action) return;
    entry.action = action;
    if (action === "revise" && !entry.text) entry.text = entry.original.text;
    selected = index;
    changed(true);
    if (action === "revise") focusEditor(index);
  }

  function addAt(position) {
    const entry = { id: "new-" + nextNew++, original: null, action: "add", text: "", reason: null, agreement: null, label: null };
    entries.splice(position, 0, entry);
    selected = position;
    changed(true);
    focusEditor(position);
  }

  function deleteAdded(index) {
    entries.splice(index, 1);
    selected = Math.min(selected, entries.length - 1);
    changed(true);
  }

  function setAgreement(index, agreement) {
    const entry = entries[index];
    if (agreement === "agree" && !entry.original.can_agree) return;
    entry.agreement = agreement;
    if (agreement === "agree") entry.label = null;
    selected = index;
    changed(true);
  }

  function setLabel(index, label) {
    const entry = entries[index];
    if (entry.original) entry.agreement = "disagree";
    entry.label = label;
    selected = index;
    changed(true);
  }

  function setReason(index, reason) {
    entries[index].reason = reason;
    selected = index;
    changed(true);
  }

  function focusEditor(index) {
    const area = document.querySelector(`#rv-revise-list li[data-index="${index}"] textarea`);
    if (area) { area.focus(); area.setSelectionRange(area.value.length, area.value.length); }
  }

  // --- rendering ---------------------------------------------------------------------------
  function renderResponse() {
    const box = el("rv-response");
    box.replaceChildren();
    const text = item.response;
    const entry = entries[selected];
    const span = entry && entry.original ? entry.original.span : null;
    ConcordMarkdown.render(box, text, span); // Markdown as DOM (textContent only), span marked
    const mark = box.querySelector("mark");
    if (!mark) return;
    const top = mark.offsetTop - box.offsetTop;
    if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - 40) box.scrollTop = Math.max(0, top - 60);
  }

  function slot(position) {
    const li = make("li", "rv-slot");
    li.appendChild(button(gettext("+ Add claim here"), "rv-add", () => addAt(position)));
    return li;
  }

  function reviseCard(entry, index) {
    const li = make("li", "rv-card rv-" + entry.action);
    li.dataset.index = String(index);
    li.dataset.id = entry.id;
    const head = make("div", "rv-head");
    head.appendChild(make("span", "rv-num", String(index + 1)));
    const body = make("div", "rv-body");
    if (entry.original) {
      body.appendChild(auto(make("p", "rv-text", entry.original.text)));
    } else {
      body.appendChild(make("p", "rv-tag", gettext("Added claim")));
    }
    head.appendChild(body);
    const actions = make("div", "rv-actions");
    if (entry.original) {
      actions.appendChild(button(gettext("Keep"), "rv-keep", () => setAction(index, "keep"), entry.action === "keep"));
      actions.appendChild(button(gettext("Revise"), "rv-revise", () => setAction(index, "revise"), entry.action === "revise"));
      actions.appendChild(button(gettext("Remove"), "rv-remove", () => setAction(index, "remove"), entry.action === "remove"));
    } else {
      actions.appendChild(button(gettext("Delete"), "rv-delete", () => deleteAdded(index)));
    }
    head.appendChild(actions);
    li.appendChild(head);

    if (entry.action === "revise" || entry.action === "add") {
      const edit = make("div", "rv-edit");
      const label = make("label", "rv-edit-label", entry.action === "add" ? gettext("New claim, as it appears in the response") : gettext("Revised claim"));
      const area = auto(make("textarea", "rv-textarea"));
      area.rows = 2;
      area.value = entry.text || "";
      area.setAttribute("aria-label", entry.action === "add" ? gettext("Added claim text") : gettext("Revised claim text"));
      area.addEventListener("input", () => { entry.text = area.value; changed(false); });
      area.addEventListener("focus", () => select(index, false));
      label.appendChild(area);
      edit.appendChild(label);
      li.appendChild(edit);
    }
    if (entry.action === "remove") {
      const reasons = make("div", "rv-reasons");
      reasons.appendChild(make("span", "rv-reasons-label", gettext("Reason:")));
      item.removal_reasons.forEach((reason, i) => {
        const b = button(REASON_NAMES[reason] || reason, "rv-reason", () => setReason(index, reason), entry.reason === reason);
        b.dataset.reason = reason;
        b.appendChild(make("kbd", "", String(i + 1)));
        reasons.appendChild(b);
      });
      li.appendChild(reasons);
    }
    li.appendChild(make("p", "rv-problem"));
    li.addEventListener("click", () => select(index, false));
    return li;
  }

  function searchLink(text) {
    if (!config.search_url || !text.trim()) return null;
    const a = make("a", "button rv-search", gettext("Search ↗"));
    a.href = config.search_url.replace("{query}", encodeURIComponent(text.trim()));
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    a.title = gettext("Search the web for this claim (opens a new tab)");
    a.addEventListener("click", (event) => event.stopPropagation());
    return a;
  }

  function choiceRow(entry, index) {
    const row = make("div", "rv-labels");
    row.appendChild(make("span", "rv-labels-label", entry.original ? gettext("Correct label:") : gettext("Label:")));
    labelsOf(entry).forEach((label, i) => {
      const b = button(labelName(label), "rv-label", () => setLabel(index, label), entry.label === label);
      b.dataset.label = label;
      if (entry.original && label === entry.original.system_label) {
        b.disabled = true; // disagreeing with the system cannot mean giving its own label
        b.title = gettext("This is the system's label: press Agree instead.");
      }
      b.appendChild(make("kbd", "", String(i + 1)));
      row.appendChild(b);
    });
    return row;
  }

  function verifyCard(entry, index) {
    const li = make("li", "rv-card rv-" + entry.action);
    li.dataset.index = String(index);
    li.dataset.id = entry.id;
    const head = make("div", "rv-head");
    head.appendChild(make("span", "rv-num", String(index + 1)));
    const body = make("div", "rv-body");
    body.appendChild(auto(make("p", "rv-text", shownText(entry))));
    if (entry.action === "revise") body.appendChild(make("p", "rv-original", gettext("Revised from:") + " " + entry.original.text));
    if (entry.action === "add") body.appendChild(make("p", "rv-tag", gettext("Added claim")));
    head.appendChild(body);
    const link = searchLink(shownText(entry) || "");
    if (link) head.appendChild(link);
    li.appendChild(head);

    if (entry.original) {
      const c = entry.original;
      const system = make("div", "rv-system");
      system.appendChild(make("span", "rv-system-label", gettext("System's label")));
      system.appendChild(make("span", "rv-chip", c.system_label ? labelName(c.system_label) : pgettext("claim label", "none")));
      if (!c.evidence.length) system.appendChild(make("span", "muted", "· " + gettext("no evidence was searched")));
      li.appendChild(system);
      if (c.reasoning) {
        const reasoning = make("div", "rv-reasoning");
        reasoning.appendChild(make("span", "rv-system-label", gettext("System's reasoning")));
        reasoning.appendChild(auto(make("p", "", c.reasoning)));
        li.appendChild(reasoning);
      }
      if (c.evidence.length) {
        const evidence = make("div", "rv-evidence");
        evidence.appendChild(make("span", "rv-system-label", fmt(ngettext("Evidence (%(count)s passage)", "Evidence (%(count)s passages)", c.evidence.length), { count: c.evidence.length })));
        c.evidence.forEach((passage, i) => {
          const details = make("details", "rv-passage");
          details.dataset.key = `${entry.id}:${i}`;
          const summary = make("summary");
          summary.appendChild(make("span", "rv-passage-number", fmt(gettext("Evidence %(n)s"), { n: i + 1 })));
          summary.appendChild(auto(make("span", "rv-passage-title", passage.title || gettext("(untitled source)"))));
          details.appendChild(summary);
          details.appendChild(auto(make("p", "rv-passage-content", passage.content)));
          evidence.appendChild(details);
        });
        li.appendChild(evidence);
      }
      const decision = make("div", "rv-decision");
      const agree = button(gettext("Agree"), "rv-agree", () => setAgreement(index, "agree"), entry.agreement === "agree");
      agree.appendChild(make("kbd", "", "a"));
      if (!c.can_agree) { agree.disabled = true; agree.title = gettext("The system gave no verdict from this label set: disagree and choose the label."); }
      const disagree = button(gettext("Disagree"), "rv-disagree", () => setAgreement(index, "disagree"), entry.agreement === "disagree");
      disagree.appendChild(make("kbd", "", "d"));
      decision.appendChild(agree);
      decision.appendChild(disagree);
      li.appendChild(decision);
      if (entry.agreement === "disagree") li.appendChild(choiceRow(entry, index));
    } else {
      li.appendChild(choiceRow(entry, index));
    }
    li.appendChild(make("p", "rv-problem"));
    li.addEventListener("click", () => select(index, false));
    return li;
  }

  // The focused button of a card, by what it does, so a re-render can give the focus back (a
  // keyboard user pressing Agree stays on Agree instead of falling back to the page's top).
  function focusedControl() {
    const active = document.activeElement;
    const card = active && active.closest ? active.closest(".rv-card") : null;
    if (!card || active.tagName !== "BUTTON") return null;
    const list = card.parentElement.id;
    const what = Array.from(active.classList).filter((c) => c.startsWith("rv-")).map((c) => "." + c).join("");
    const data = active.dataset.label ? `[data-label="${active.dataset.label}"]` : active.dataset.reason ? `[data-reason="${active.dataset.reason}"]` : "";
    return `#${list} .rv-card[data-index="${card.dataset.index}"] button${what}${data}`;
  }

  function render() {
    const refocus = focusedControl();
    // Re-rendering must not close the evidence passages the annotator opened.
    const opened = new Set(Array.from(document.querySelectorAll("#rv-verify-list details[open]"), (d) => d.dataset.key));
    const revise = el("rv-revise-list");
    revise.replaceChildren();
    revise.appendChild(slot(0));
    entries.forEach((entry, index) => {
      revise.appendChild(reviseCard(entry, index));
      revise.appendChild(slot(index + 1));
    });
    const verify = el("rv-verify-list");
    verify.replaceChildren();
    entries.forEach((entry, index) => { if (verifying(entry)) verify.appendChild(verifyCard(entry, index)); });
    for (const details of verify.querySelectorAll("details")) details.open = opened.has(details.dataset.key);
    el("rv-verify-empty").hidden = entries.some(verifying);
    paint();
    const again = refocus ? document.querySelector(refocus) : null;
    if (again && !again.disabled) again.focus({ preventScroll: true });
  }

  /* Selection, problem marks and step counts: cheap, called on every keystroke. */
  function paint() {
    let reviseOpen = 0, verifyOpen = 0, toVerify = 0;
    entries.forEach((entry, index) => {
      const problem = problemOf(entry);
      if (problem && problem.screen === "revise") reviseOpen += 1;
      if (verifying(entry)) { toVerify += 1; if (problem) verifyOpen += 1; }
      document.querySelectorAll(`.rv-card[data-index="${index}"]`).forEach((card) => {
        const inVerify = card.parentElement.id === "rv-verify-list";
        const shows = problem && (inVerify || problem.screen === "revise");
        card.classList.toggle("needs", !!shows);
        card.classList.toggle("done", !problem);
        card.classList.toggle("selected", index === selected);
        card.querySelector(".rv-problem").textContent = shows ? fmt(gettext("Needs a decision: %(what)s"), { what: problem.text }) : "";
      });
    });
    el("rv-count-revise").textContent = reviseOpen ? fmt(gettext("%(count)s open"), { count: reviseOpen }) : "✓";
    el("rv-count-verify").textContent = fmt(gettext("%(done)s/%(total)s decided"), { done: toVerify - verifyOpen, total: toVerify });
    el("rv-tab-revise").classList.toggle("open", reviseOpen > 0);
    el("rv-tab-verify").classList.toggle("open", verifyOpen > 0);
    renderResponse();
  }

  function select(index, scroll) {
    if (index < 0 || index >= entries.length) return;
    selected = index;
    paint();
    if (scroll) {
      const card = document.querySelector(`#rv-${screen}-list .rv-card[data-index="${index}"]`);
      if (card) card.scrollIntoView({ block: "nearest" });
    }
  }

  function show(name) {
    screen = name;
    el("rv-screen-revise").hidden = name !== "revise";
    el("rv-screen-verify").hidden = name !== "verify";
    for (const tab of document.querySelectorAll(".rv-step")) {
      const on = tab.dataset.screen === name;
      tab.classList.toggle("active", on);
      tab.setAttribute("aria-selected", String(on));
    }
    for (const hint of document.querySelectorAll("[data-screen-only]")) hint.hidden = hint.dataset.screenOnly !== name;
    if (name === "verify" && !verifying(entries[selected] || {action: "remove"})) {
      const first = entries.findIndex(verifying);
      if (first >= 0) selected = first;
    }
    // Rebuilt, not repainted: text typed on the revise screen (added or revised claims) must
    // appear on the verify screen.
    if (name === "verify") render(); else paint();
  }

  function visibleIndices() {
    return entries.map((e, i) => i).filter((i) => screen === "revise" || verifying(entries[i]));
  }

  Concord.tasks.claim_review = {
    mount(container, data, answer, cfg, onChange) {
      item = data;
      config = cfg;
      notify = onChange;
      entries = fromAnswer(answer);
      nextNew = 1 + entries.reduce((m, e) => Math.max(m, /^new-(\d+)$/.test(e.id) ? Number(e.id.slice(4)) : 0), 0);
      selected = 0;
      el("rv-question").textContent = data.question;
      for (const tab of document.querySelectorAll(".rv-step")) tab.onclick = () => show(tab.dataset.screen);
      el("rv-to-verify").onclick = () => { show("verify"); window.scrollTo(0, 0); };
      render();
      show("revise");
    },

    answer() {
      return {
        claims: entries.map((e) => {
          const d = { id: e.id, action: e.action };
          if (e.action === "revise" || e.action === "add") d.text = (e.text || "").trim();
          if (e.action === "remove" && e.reason) d.reason = e.reason;
          if ((e.action === "keep" || e.action === "revise") && e.agreement) d.agreement = e.agreement;
          if (e.label && (e.action === "add" || e.agreement === "disagree")) d.label = e.label;
          return d;
        }),
      };
    },

    problem() {
      const open = [];
      entries.forEach((entry, index) => {
        const p = problemOf(entry);
        if (p) open.push(`#${index + 1} ${p.text}`);
      });
      if (!open.length) return null;
      const listed = open.slice(0, 3).join("; ") + (open.length > 3 ? "; …" : "");
      return fmt(ngettext("%(count)s claim needs a decision (%(listed)s).", "%(count)s claims need a decision (%(listed)s).", open.length), { count: open.length, listed });
    },

    key(event) {
      const indices = visibleIndices();
      const at = indices.indexOf(selected);
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        if (!indices.length) return false;
        const step = event.key === "ArrowDown" ? 1 : -1;
        const next = at < 0 ? indices[0] : indices[Math.min(indices.length - 1, Math.max(0, at + step))];
        select(next, true);
        return true;
      }
      const entry = entries[selected];
      if (!entry || at < 0) return false;
      if (screen === "revise") {
        if (entry.original && event.key === "k") { setAction(selected, "keep"); return true; }
        if (entry.original && event.key === "r") { setAction(selected, "revise"); return true; }
        if (entry.original && event.key === "x") { setAction(selected, "remove"); return true; }
        const reason = item.removal_reasons[Number(event.key) - 1];
        if (entry.action === "remove" && reason) { setReason(selected, reason); return true; }
        return false;
      }
      if (entry.original && event.key === "a") { setAgreement(selected, "agree"); return true; }
      if (entry.original && event.key === "d") { setAgreement(selected, "disagree"); return true; }
      const label = labelsOf(entry)[Number(event.key) - 1];
      const systems = entry.original && label === entry.original.system_label;
      if (/^[1-9]$/.test(event.key) && label && !systems && (!entry.original || entry.agreement === "disagree")) {
        setLabel(selected, label);
        return true;
      }
      return false;
    },
  };
})();
