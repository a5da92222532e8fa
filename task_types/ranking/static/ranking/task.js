/* Ranking with ties: rank the k outputs (shown as Output A, B, C… in this annotator's order, never
 * with system names) on every criterion of the project. Ranks follow the standard competition
 * convention: 1 is best, tied outputs share a rank and the next rank skips the shared places
 * (1, 1, 3). Criterion definitions stay visible beside their rank row.
 * Keys: arrows move the active cell, 1–9 set its rank and move to the next output.
 * All dataset text goes through textContent. */
(function () {
  "use strict";

  const fmt = (text, values) => interpolate(text, values, true);

  let item, criteria, notify, ranks, active, k;
  let convention = "competition", showTieNote = true;

  const el = (id) => document.getElementById(id);
  const letter = (i) => String.fromCharCode(65 + i);
  const outputName = (i) => fmt(gettext("Output %(letter)s"), { letter: letter(i) });

  function make(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }
  // Dataset and typed text: its own direction (dir="auto"), so right-to-left text reads right on
  // any page and left-to-right text on a right-to-left one.
  function auto(node) { node.dir = "auto"; return node; }

  /* Standard competition ranks of any ranking: 1 + the number of strictly better values. */
  function competition(values) {
    return values.map((v) => 1 + values.filter((o) => o < v).length);
  }

  /* Dense ranks of any ranking: 1 + the number of distinct strictly better values. */
  function dense(values) {
    return values.map((v) => 1 + new Set(values.filter((o) => o < v)).size);
  }

  /* The ranks the ordering expresses, written in the project's tie convention. */
  function conventional(values) {
    if (convention === "free") return values.slice();
    return convention === "dense" ? dense(values) : competition(values);
  }

  function keys() { return item.outputs.map((o) => o.key); }

  /* null when the criterion is complete and valid, otherwise what is wrong. */
  function criterionProblem(name) {
    const given = ranks[name] || {};
    const missing = keys().map((key, i) => (given[key] ? null : letter(i))).filter(Boolean);
    if (missing.length) return { kind: "missing", text: fmt(gettext("rank output %(outputs)s"), { outputs: missing.join(", ") }) };
    const values = keys().map((key) => given[key]);
    const fixed = conventional(values);
    if (fixed.some((v, i) => v !== values[i])) {
      const rule = convention === "dense"
        ? gettext("after a tie the next rank follows the shared one (%(fixed)s, not %(given)s)")
        : gettext("after a tie the next rank skips the shared places (%(fixed)s, not %(given)s)");
      return { kind: "convention", text: fmt(rule, { fixed: fixed.join(", "), given: values.join(", ") }), fixed };
    }
    return null;
  }

  function setRank(c, o, rank) {
    const name = criteria[c].name;
    ranks[name] = ranks[name] || {};
    const key = keys()[o];
    if (ranks[name][key] === rank) delete ranks[name][key]; else ranks[name][key] = rank;
    paint();
    notify();
  }

  function applyFix(c) {
    const name = criteria[c].name;
    const problem = criterionProblem(name);
    if (!problem || !problem.fixed) return;
    keys().forEach((key, i) => { ranks[name][key] = problem.fixed[i]; });
    paint();
    notify();
  }

  function activate(c, o) {
    active = [Math.max(0, Math.min(criteria.length - 1, c)), Math.max(0, Math.min(k - 1, o))];
    paint();
    showActive();
  }

  function showActive() {
    const cell = document.querySelector(`.rk-cell[data-criterion="${active[0]}"][data-output="${active[1]}"]`);
    if (cell && cell.scrollIntoView) cell.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  // --- rendering ---------------------------------------------------------------------------
  function render() {
    const grid = el("rk-grid");
    grid.replaceChildren();
    grid.style.setProperty("--k", String(k));
    grid.appendChild(make("div", "rk-corner"));
    item.outputs.forEach((o, i) => grid.appendChild(make("div", "rk-output-head", outputName(i))));
    const instructions = make("div", "rk-corner rk-corner-text");
    instructions.appendChild(make("div", "rk-corner-title", gettext("How to rank")));
    const help = el("rk-instructions").content.cloneNode(true);
    // Only the note on ties of this project's convention, and none where the researcher keeps
    // to the original guideline's wording (tie_instructions off).
    help.querySelectorAll("[data-convention]").forEach((p) => {
      if (!showTieNote || p.dataset.convention !== convention) p.remove();
    });
    instructions.appendChild(help);
    grid.appendChild(instructions);
    item.outputs.forEach((o, i) => {
      const cell = auto(make("div", "rk-output-text", o.text));
      cell.dataset.output = String(i);
      cell.dataset.letter = letter(i);
      cell.dataset.name = outputName(i); // shown above the text on a phone (task.css)
      grid.appendChild(cell);
    });
    criteria.forEach((criterion, c) => {
      const head = make("div", "rk-criterion");
      head.dataset.criterion = String(c);
      head.appendChild(make("div", "rk-criterion-name", criterion.name));
      head.appendChild(auto(make("p", "rk-criterion-definition", criterion.definition)));
      if (criterion.examples && criterion.examples.length) {
        const details = make("details", "rk-examples");
        details.appendChild(make("summary", "", fmt(gettext("Examples (%(count)s)"), { count: criterion.examples.length })));
        const list = make("ul");
        for (const example of criterion.examples) list.appendChild(auto(make("li", "", example)));
        details.appendChild(list);
        head.appendChild(details);
      }
      const status = make("p", "rk-status");
      head.appendChild(status);
      const fix = make("button", "button rk-fix", "");
      fix.type = "button";
      fix.hidden = true;
      fix.addEventListener("click", () => applyFix(c));
      head.appendChild(fix);
      grid.appendChild(head);
      item.outputs.forEach((o, i) => {
        const cell = make("div", "rk-cell");
        cell.dataset.criterion = String(c);
        cell.dataset.output = String(i);
        cell.dataset.letter = letter(i);
        cell.dataset.tie = pgettext("ranking", "tie"); // shown on a tied cell (task.css)
        cell.setAttribute("role", "radiogroup");
        cell.setAttribute("aria-label", fmt(gettext("%(criterion)s, output %(letter)s"), { criterion: criterion.name, letter: letter(i) }));
        for (let rank = 1; rank <= k; rank++) {
          const b = make("button", "rk-rank", String(rank));
          b.type = "button";
          b.dataset.rank = String(rank);
          b.setAttribute("role", "radio");
          b.addEventListener("click", () => { active = [c, i]; setRank(c, i, rank); });
          cell.appendChild(b);
        }
        cell.addEventListener("click", () => activate(c, i));
        grid.appendChild(cell);
      });
    });
    paint();
  }

  function paint() {
    criteria.forEach((criterion, c) => {
      const given = ranks[criterion.name] || {};
      const problem = criterionProblem(criterion.name);
      const head = document.querySelector(`.rk-criterion[data-criterion="${c}"]`);
      head.classList.toggle("done", !problem);
      head.classList.toggle("invalid", !!problem && problem.kind === "convention");
      const values = keys().map((key) => given[key]);
      head.querySelector(".rk-status").textContent = problem ? problem.text : "✓ " + summary(values);
      const fix = head.querySelector(".rk-fix");
      fix.hidden = !(problem && problem.fixed);
      if (problem && problem.fixed) fix.textContent = fmt(gettext("Use %(ranks)s"), { ranks: problem.fixed.join(", ") });
      keys().forEach((key, i) => {
        const cell = document.querySelector(`.rk-cell[data-criterion="${c}"][data-output="${i}"]`);
        const tied = given[key] && values.filter((v) => v === given[key]).length > 1;
        cell.classList.toggle("active", active[0] === c && active[1] === i);
        cell.classList.toggle("tied", !!tied);
        for (const b of cell.querySelectorAll(".rk-rank")) {
          const on = Number(b.dataset.rank) === given[key];
          b.classList.toggle("on", on);
          b.setAttribute("aria-checked", String(on));
        }
      });
    });
  }

  /* "A and C tied first, B third" style reading of a complete ranking. */
  function summary(values) {
    const order = values.map((v, i) => [v, letter(i)]).sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1]));
    const groups = [];
    for (const [v, l] of order) {
      const last = groups[groups.length - 1];
      if (last && last.rank === v) last.letters.push(l); else groups.push({ rank: v, letters: [l] });
    }
    return groups.map((g) => `${g.letters.join(" = ")} (${g.rank})`).join(" > ");
  }

  Concord.tasks.ranking = {
    mount(container, data, answer, config, onChange) {
      item = data;
      criteria = config.criteria || [];
      convention = ["dense", "free"].includes(config.tie_convention) ? config.tie_convention : "competition";
      showTieNote = config.tie_instructions !== false;
      notify = onChange;
      k = data.outputs.length;
      ranks = {};
      const known = new Set(keys());
      const saved = answer && answer.ranks && typeof answer.ranks === "object" ? answer.ranks : {};
      for (const criterion of criteria) {
        ranks[criterion.name] = {};
        for (const [key, rank] of Object.entries(saved[criterion.name] || {})) {
          if (known.has(key) && Number.isInteger(rank) && rank >= 1 && rank <= k) ranks[criterion.name][key] = rank;
        }
      }
      active = [0, 0];
      el("rk-claim").textContent = data.claim;
      el("rk-label").textContent = data.label;
      render();
    },

    answer() {
      const out = {};
      for (const criterion of criteria) {
        const given = ranks[criterion.name] || {};
        if (Object.keys(given).length) out[criterion.name] = { ...given };
      }
      return { order: keys(), ranks: out };
    },

    problem() {
      if (!criteria.length) return gettext("This project defines no criteria; tell the researcher.");
      const open = [];
      for (const criterion of criteria) {
        const p = criterionProblem(criterion.name);
        if (p) open.push(`${criterion.name}: ${p.text}`);
      }
      const more = open.length > 2 ? " · " + fmt(gettext("and %(count)s more"), { count: open.length - 2 }) : "";
      return open.length ? open.slice(0, 2).join(" · ") + more : null;
    },

    key(event) {
      const moves = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
      if (moves[event.key]) {
        // Arrows move between cells while the grid has the focus; elsewhere they scroll the page.
        if (!el("rk-grid").contains(document.activeElement)) return false;
        activate(active[0] + moves[event.key][0], active[1] + moves[event.key][1]);
        return true;
      }
      if (/^[1-9]$/.test(event.key) && Number(event.key) <= k) {
        const [c, o] = active;
        const name = criteria[c].name;
        ranks[name] = ranks[name] || {};
        ranks[name][keys()[o]] = Number(event.key); // keys set (never toggle off), then advance
        if (o + 1 < k) active = [c, o + 1];
        else if (c + 1 < criteria.length) active = [c + 1, 0];
        paint();
        showActive();
        notify();
        return true;
      }
      return false;
    },
  };
})();
