/* Stance (UPHILL): label the whole response and each chosen sentence Agree / Disagree / Neutral,
 * with "Not sure". Row 0 is the whole response; rows 1..k are the sentences chosen at import.
 * Keys: a / d / n set the current row's label (and move to the next row), u toggles not sure,
 * ArrowUp / ArrowDown move between rows. All dataset text goes through textContent. */
(function () {
  "use strict";

  // The keys stay a / d / n / u in every language (the page's hint says so).
  const LABELS = [
    { value: "agree", text: pgettext("stance", "Agree"), key: "a" },
    { value: "disagree", text: pgettext("stance", "Disagree"), key: "d" },
    { value: "neutral", text: pgettext("stance", "Neutral"), key: "n" },
  ];
  const fmt = (text, values) => interpolate(text, values, true);

  let item, rows, current, notify;

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

  // Row r > 0 labels item.targets[r - 1]; its number in the UI is its position among targets.
  function sentenceOfRow(r) { return r === 0 ? null : item.targets[r - 1]; }

  function paint() {
    el("st-rows").querySelectorAll(".st-row").forEach((li) => {
      const r = Number(li.dataset.row);
      li.classList.toggle("current", r === current);
      li.setAttribute("aria-current", r === current ? "true" : "false");
      li.querySelectorAll(".st-choice").forEach((button) => {
        button.setAttribute("aria-checked", String(rows[r].label === button.dataset.value));
      });
      li.querySelector("input[type=checkbox]").checked = rows[r].not_sure;
    });
    const focused = sentenceOfRow(current);
    el("st-response").querySelectorAll(".st-sentence").forEach((span) => {
      span.classList.toggle("current", Number(span.dataset.index) === focused);
    });
  }

  function moveTo(r) {
    current = Math.max(0, Math.min(rows.length - 1, r));
    paint();
    const li = el("st-rows").querySelector(`.st-row[data-row="${current}"]`);
    if (li && li.scrollIntoView) li.scrollIntoView({ block: "nearest" });
  }

  function setLabel(r, value, advance) {
    rows[r].label = value;
    if (advance && r < rows.length - 1) current = r + 1;
    paint();
    notify();
  }

  function toggleUnsure(r) {
    rows[r].not_sure = !rows[r].not_sure;
    paint();
    notify();
  }

  function buildRow(r) {
    const index = sentenceOfRow(r);
    const li = make("li", "st-row" + (r === 0 ? " whole" : ""));
    li.dataset.row = String(r);
    li.setAttribute("role", "group");
    const title = make("div", "st-row-title");
    li.appendChild(title);
    if (r === 0) {
      title.appendChild(make("span", "", gettext("Whole response")));
      li.setAttribute("aria-label", gettext("Whole response"));
    } else {
      title.appendChild(make("span", "st-mark", String(r)));
      // One numbering everywhere: the badge in the response, this row and its title.
      title.appendChild(make("span", "", fmt(gettext("Sentence %(n)s, on its own"), { n: r })));
      li.setAttribute("aria-label", fmt(gettext("Sentence %(n)s"), { n: r }));
      li.appendChild(auto(make("p", "st-row-text", item.sentences[index])));
    }
    const controls = make("div", "st-controls");
    for (const label of LABELS) {
      const button = make("button", "st-choice " + label.value, label.text);
      button.type = "button";
      button.dataset.value = label.value;
      button.setAttribute("role", "radio");
      button.appendChild(make("kbd", "", label.key));
      button.addEventListener("click", (event) => {
        event.stopPropagation();
        current = r;
        setLabel(r, label.value, false);
      });
      controls.appendChild(button);
    }
    const unsure = make("label", "st-unsure");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.addEventListener("click", (event) => event.stopPropagation());
    box.addEventListener("change", () => { current = r; rows[r].not_sure = box.checked; paint(); notify(); });
    unsure.appendChild(box);
    unsure.appendChild(document.createTextNode(gettext("Not sure") + " "));
    unsure.appendChild(make("kbd", "", "u"));
    unsure.addEventListener("click", (event) => event.stopPropagation());
    controls.appendChild(unsure);
    li.appendChild(controls);
    li.addEventListener("click", () => moveTo(r));
    return li;
  }

  Concord.tasks.stance = {
    mount(container, data, answer, config, onChange) {
      item = data;
      notify = onChange;
      current = 0;
      const saved = {};
      for (const s of (answer && answer.sentences) || []) saved[s.index] = s;
      rows = [{ label: (answer && answer.label) || null, not_sure: !!(answer && answer.not_sure) }];
      for (const index of data.targets) {
        const s = saved[index];
        rows.push({ label: s ? s.label : null, not_sure: !!(s && s.not_sure) });
      }

      el("st-claim").textContent = data.claim;
      const response = el("st-response");
      response.replaceChildren();
      const number = {};
      data.targets.forEach((index, position) => { number[index] = position + 1; });
      data.sentences.forEach((text, index) => {
        const span = make("span", "st-sentence" + (number[index] ? " target" : ""));
        span.dataset.index = String(index);
        if (number[index]) {
          span.appendChild(make("span", "st-mark", String(number[index])));
          span.addEventListener("click", () => moveTo(number[index]));
        }
        span.appendChild(document.createTextNode(text));
        response.appendChild(span);
        response.appendChild(document.createTextNode(" "));
      });

      const list = el("st-rows");
      list.replaceChildren();
      rows.forEach((_, r) => list.appendChild(buildRow(r)));
      el("st-help").onclick = () => {
        const panel = el("guidelines");
        if (!panel) return;
        const toggle = el("guidelines-toggle");
        if (panel.hidden && toggle) toggle.click();
        else panel.hidden = false;
        panel.scrollIntoView({ block: "start" });
      };
      paint();
    },

    answer() {
      const answer = { label: rows[0].label, not_sure: rows[0].not_sure, sentences: [] };
      rows.slice(1).forEach((row, position) => {
        if (row.label) answer.sentences.push({ index: item.targets[position], label: row.label, not_sure: row.not_sure });
      });
      return answer;
    },

    problem() {
      if (!rows[0].label) return gettext("Choose Agree, Disagree or Neutral for the whole response (keys a, d, n).");
      const missing = rows.findIndex((row, r) => r > 0 && !row.label);
      if (missing > 0) return fmt(gettext("Label sentence %(n)s on its own too (row %(row)s)."), { n: missing, row: missing + 1 });
      return null;
    },

    key(event) {
      const key = event.key.toLowerCase();
      const label = LABELS.find((l) => l.key === key);
      if (label) { setLabel(current, label.value, true); return true; }
      if (key === "u") { toggleUnsure(current); return true; }
      if (event.key === "ArrowDown") { moveTo(current + 1); return true; }
      if (event.key === "ArrowUp") { moveTo(current - 1); return true; }
      return false;
    },
  };
})();
