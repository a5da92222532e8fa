/* Citation recovery: choose the explanation sentences that should cite the highlighted evidence,
 * or "none"; rate helpfulness 0–100 (the slider must be moved at least once). A rating-only item
 * (data.rating_only: the explanation cites no evidence) asks for the helpfulness rating alone.
 * Keys: digits toggle sentences (two digits from sentence 10 on), 0 toggles "none", h takes the
 * focus to the helpfulness slider (arrows move it, Esc leaves it). All dataset text goes through textContent. */
(function () {
  "use strict";

  let root, item, selected, none, helpfulness, touched, notify;
  let pending = null, pendingTimer = null;

  const el = (id) => document.getElementById(id);

  function make(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  // Dataset and typed text: its own direction (dir="auto"), so right-to-left text reads right on
  // any page and left-to-right text on a right-to-left one.
  function auto(node) { node.dir = "auto"; return node; }

  function paint() {
    el("cr-sentences").querySelectorAll("li").forEach((li) => {
      const on = selected.has(Number(li.dataset.index));
      li.classList.toggle("selected", on);
      li.setAttribute("aria-checked", String(on));
    });
    el("cr-none").checked = none;
    el("cr-sentences").classList.toggle("disabled", none);
    const out = el("cr-helpfulness-value");
    out.textContent = touched ? String(helpfulness) : "–";
    out.classList.toggle("untouched", !touched);
  }

  function toggle(index) {
    if (item.rating_only || index < 0 || index >= item.sentences.length) return;
    if (selected.has(index)) selected.delete(index); else selected.add(index);
    if (selected.size) none = false;
    paint();
    notify();
  }

  function setNone(value) {
    none = value;
    if (none) selected.clear();
    paint();
    notify();
  }

  // A digit still waiting for a possible second one counts as soon as the answer is read.
  function flushPending() {
    if (pending === null) return;
    clearTimeout(pendingTimer);
    const first = pending;
    pending = null;
    toggle(first - 1);
  }

  Concord.tasks.citation_recovery = {
    mount(container, data, answer, config, onChange) {
      root = container;
      item = data;
      notify = onChange;
      clearTimeout(pendingTimer);
      pending = null;
      selected = new Set(answer && answer.sentences ? answer.sentences : []);
      none = !!(answer && answer.none);
      touched = !!(answer && typeof answer.helpfulness === "number");
      helpfulness = touched ? answer.helpfulness : 50;

      el("cr-claim").textContent = data.claim;
      el("cr-label").textContent = data.label;
      el("cr-question").textContent = config.helpfulness_question;

      const evidence = el("cr-evidence");
      evidence.replaceChildren();
      let target = null;
      for (const e of data.evidence) {
        const li = make("li", e.target ? "target" : "");
        li.appendChild(make("span", "evidence-id", `[${e.id}]`));
        li.appendChild(auto(make("span", "evidence-text", e.text)));
        if (e.target) { li.setAttribute("aria-label", gettext("Target evidence")); target = li; }
        evidence.appendChild(li);
      }

      const ratingOnly = !!data.rating_only;
      el("cr-select-hint").hidden = ratingOnly;
      el("cr-rating-only").hidden = !ratingOnly;
      el("cr-none-option").hidden = ratingOnly;
      const list = el("cr-sentences");
      list.replaceChildren();
      list.classList.toggle("rating-only", ratingOnly);
      data.sentences.forEach((text, index) => {
        const li = make("li", "sentence");
        li.dataset.index = String(index);
        if (!ratingOnly) {
          li.tabIndex = 0;
          li.setAttribute("role", "checkbox");
          li.addEventListener("click", () => toggle(index));
        }
        li.appendChild(make("span", "number", String(index + 1)));
        li.appendChild(auto(make("span", "text", text)));
        list.appendChild(li);
      });

      const noneBox = el("cr-none");
      noneBox.onchange = () => setNone(noneBox.checked);
      const slider = el("cr-helpfulness");
      slider.value = String(helpfulness);
      slider.oninput = () => { helpfulness = Number(slider.value); touched = true; paint(); notify(); };
      paint();
      // The target at the top of the evidence list, scrolling the list only: the page itself
      // starts at its top, and a target centred in a list that runs on under the fixed Submit bar
      // (on a phone) started under that bar.
      if (target) {
        evidence.scrollTop += target.getBoundingClientRect().top - evidence.getBoundingClientRect().top - 4;
      }
    },

    answer() {
      flushPending();
      const answer = item.rating_only ? {} : { sentences: Array.from(selected).sort((a, b) => a - b), none };
      if (touched) answer.helpfulness = helpfulness;
      return answer;
    },

    problem() {
      flushPending();
      if (!item.rating_only && !none && selected.size === 0) return gettext("Select at least one sentence, or “No sentence should cite this evidence”.");
      if (!touched) return gettext("Move the helpfulness slider to give your rating.");
      return null;
    },

    // Digits toggle sentences. With 10 or more sentences a digit that can start a two-digit
    // number waits briefly for a second one ("1", "2" -> sentence 12); "0" alone is "none".
    key(event) {
      if (event.key === "h" || event.key === "H") {
        el("cr-helpfulness").focus();
        return true;
      }
      if (item.rating_only || !/^[0-9]$/.test(event.key)) return false;
      const digit = Number(event.key);
      const count = item.sentences.length;
      if (pending !== null) {
        clearTimeout(pendingTimer);
        const number = pending * 10 + digit;
        pending = null;
        if (number <= count) toggle(number - 1);
        return true;
      }
      if (digit === 0) { setNone(!none); return true; }
      if (digit * 10 > count) { toggle(digit - 1); return true; }
      pending = digit;
      pendingTimer = setTimeout(() => { const first = pending; pending = null; if (first !== null) toggle(first - 1); }, 450);
      return true;
    },
  };
})();
