/* Questionnaire: the project's questions (config.questions) over the item's configured fields
 * (config.fields, stacked or side by side). One question is current at a time.
 * Keys: ArrowUp / ArrowDown move between questions; digits 1–9, 0 choose an option or a Likert
 * point (single choice and Likert then move on; multiple choice toggles); ArrowLeft / ArrowRight
 * move a slider by its step (Shift: by 10), Home / End to 0 / 100; a / t / b (or 1 / 2 / 3) give
 * a pairwise preference (1 / 2 / 3 in the order shown: an assignment may show the pair's second
 * field first, its presentation); moving to a free-text question puts the cursor in its box, Esc leaves it.
 * All dataset text goes through textContent (Markdown through markdown.js, which does too). */
(function () {
  "use strict";

  const fmt = (text, values) => interpolate(text, values, true);

  let questions, fields, values, current, notify, firstShown = {};

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

  const digitKey = (n) => (n < 9 ? String(n + 1) : n === 9 ? "0" : "");

  /* The choices a question's digits pick from: [{value, label, key}]. */
  function choices(q) {
    if (q.kind === "single" || q.kind === "multiple") {
      return q.options.map((o, n) => ({ value: o.value, label: o.label, key: digitKey(n) }));
    }
    if (q.kind === "likert") {
      return q.points.map((label, n) => ({ value: n + 1, label, key: digitKey(n) }));
    }
    if (q.kind === "pairwise") {
      const out = [{ value: -1, label: q.labels[0], key: "a" }];
      if (q.allow_tie) out.push({ value: 0, label: q.labels[1], key: "t" });
      out.push({ value: 1, label: q.labels[2], key: "b" });
      // Counterbalanced: when the second field is shown first, so is its choice (1 / 2 / 3
      // follow the page; a / t / b stay with their labels).
      if (firstShown[q.id] === q.fields[1]) out.reverse();
      return out;
    }
    return [];
  }

  function answered(q) {
    const v = values[q.id];
    if (v === null || v === undefined) return false;
    if (q.kind === "text") return String(v).trim() !== "";
    if (q.kind === "multiple") return v.length > 0;
    return true;
  }

  function isChosen(q, value) {
    const v = values[q.id];
    return q.kind === "multiple" ? (v || []).includes(value) : v === value;
  }

  // --- rendering ---------------------------------------------------------------------------
  function renderField(f, text) {
    const box = make("section", "qn-field");
    box.dataset.field = f.name;
    box.appendChild(auto(make("h2", "", f.label)));
    const body = auto(make("div", f.format === "markdown" ? "qn-markdown" : "qn-text"));
    if (f.format === "markdown" && window.ConcordQuestionnaireMarkdown) {
      window.ConcordQuestionnaireMarkdown.render(body, text);
    } else {
      body.textContent = text;
    }
    box.appendChild(body);
    return box;
  }

  function renderFields(item, layout) {
    const root = el("qn-fields");
    root.replaceChildren();
    root.className = "qn-fields " + (layout === "side_by_side" ? "side_by_side" : "stacked");
    // Side by side: the fields of the first pairwise question share a row (the compared pair);
    // without one, every field after the first does.
    const pairwise = questions.find((q) => q.kind === "pairwise");
    const paired = pairwise ? pairwise.fields : fields.slice(1).map((f) => f.name);
    // The fields in this assignment's order (a pairwise question's two fields may trade places).
    const byName = new Map(fields.map((f) => [f.name, f]));
    const order = (item.order || []).filter((name) => byName.has(name));
    const shown = order.length === fields.length ? order.map((name) => byName.get(name)) : fields;
    let row = null;
    for (const f of shown) {
      const node = renderField(f, (item.fields || {})[f.name] || "");
      if (layout === "side_by_side" && paired.includes(f.name)) {
        if (!row) { row = make("div", "qn-pair"); root.appendChild(row); }
        row.appendChild(node);
      } else {
        root.appendChild(node);
      }
    }
  }

  function choiceButton(q, i, choice) {
    const role = q.kind === "multiple" ? "checkbox" : "radio";
    const button = make("button", "qn-choice");
    button.type = "button";
    button.setAttribute("role", role);
    button.dataset.value = JSON.stringify(choice.value);
    if (q.kind === "likert") button.appendChild(make("span", "qn-point", String(choice.value)));
    button.appendChild(auto(make("span", "", choice.label)));
    if (choice.key) button.appendChild(make("kbd", "", choice.key));
    button.addEventListener("click", (event) => {
      event.stopPropagation();
      current = i;
      choose(q, choice.value, false);
    });
    return button;
  }

  function renderControls(q, i) {
    const controls = make("div", "qn-controls");
    if (q.kind === "likert") {
      controls.classList.add("qn-likert");
      controls.style.setProperty("--points", String(q.points.length));
    }
    if (["single", "multiple", "likert", "pairwise"].includes(q.kind)) {
      controls.setAttribute("role", q.kind === "multiple" ? "group" : "radiogroup");
      controls.setAttribute("aria-label", q.prompt);
      for (const choice of choices(q)) controls.appendChild(choiceButton(q, i, choice));
    } else if (q.kind === "slider") {
      controls.classList.add("qn-slider");
      const input = document.createElement("input");
      input.type = "range";
      input.min = "0";
      input.max = "100";
      input.step = String(q.step || 1);
      input.setAttribute("aria-label", q.prompt);
      input.addEventListener("input", () => { current = i; setValue(q, Number(input.value)); });
      input.addEventListener("click", (event) => event.stopPropagation());
      controls.appendChild(make("span", "qn-slider-end", q.min_label ? `0 · ${q.min_label}` : "0"));
      controls.appendChild(input);
      controls.appendChild(make("span", "qn-slider-end", q.max_label ? `100 · ${q.max_label}` : "100"));
      controls.appendChild(make("output", "qn-slider-value"));
    } else if (q.kind === "text") {
      const box = auto(document.createElement(q.multiline === false ? "input" : "textarea"));
      box.className = "qn-textbox";
      if (q.multiline === false) box.type = "text";
      box.maxLength = q.max_length || 2000;
      box.setAttribute("aria-label", q.prompt);
      box.addEventListener("input", () => { current = i; setValue(q, box.value); });
      box.addEventListener("focus", () => { if (current !== i) { current = i; paint(); } });
      box.addEventListener("click", (event) => event.stopPropagation());
      controls.appendChild(box);
    }
    return controls;
  }

  function renderQuestions() {
    const list = el("qn-questions");
    list.replaceChildren();
    questions.forEach((q, i) => {
      const li = make("div", "qn-question qn-kind-" + q.kind);
      li.dataset.question = q.id;
      li.dataset.index = String(i);
      li.setAttribute("role", "group");
      li.setAttribute("aria-label", fmt(gettext("Question %(n)s"), { n: i + 1 }));
      const title = make("div", "qn-title");
      title.appendChild(make("span", "qn-number", String(i + 1)));
      title.appendChild(auto(make("span", "qn-prompt", q.prompt)));
      if (!q.required) title.appendChild(make("span", "qn-optional", gettext("(optional)")));
      li.appendChild(title);
      if (q.help) li.appendChild(auto(make("p", "qn-help", q.help)));
      li.appendChild(renderControls(q, i));
      li.addEventListener("click", () => moveTo(i, false));
      list.appendChild(li);
    });
  }

  function paint() {
    el("qn-questions").querySelectorAll(".qn-question").forEach((li) => {
      const i = Number(li.dataset.index);
      const q = questions[i];
      li.classList.toggle("current", i === current);
      li.classList.toggle("answered", answered(q));
      li.setAttribute("aria-current", i === current ? "true" : "false");
      li.querySelectorAll(".qn-choice").forEach((button) => {
        button.setAttribute("aria-checked", String(isChosen(q, JSON.parse(button.dataset.value))));
      });
      if (q.kind === "slider") {
        const v = values[q.id];
        const wrap = li.querySelector(".qn-slider");
        wrap.classList.toggle("unset", v === null || v === undefined);
        const input = li.querySelector("input[type=range]");
        if (v !== null && v !== undefined) input.value = String(v);
        li.querySelector(".qn-slider-value").textContent = v === null || v === undefined ? gettext("not set") : String(v);
      }
      if (q.kind === "text") {
        const box = li.querySelector(".qn-textbox");
        const v = values[q.id] || "";
        if (box.value !== v) box.value = v;
      }
    });
  }

  function moveTo(i, byKeyboard) {
    current = Math.max(0, Math.min(questions.length - 1, i));
    paint();
    const li = el("qn-questions").querySelector(`.qn-question[data-index="${current}"]`);
    if (li && li.scrollIntoView) li.scrollIntoView({ block: "nearest" });
    if (byKeyboard && questions[current].kind === "text") li.querySelector(".qn-textbox").focus();
  }

  function setValue(q, value) {
    values[q.id] = value;
    paint();
    notify();
  }

  function choose(q, value, advance) {
    if (q.kind === "multiple") {
      const chosen = (values[q.id] || []).slice();
      const at = chosen.indexOf(value);
      if (at >= 0) chosen.splice(at, 1); else chosen.push(value);
      // Stored in the options' order, as the server does.
      values[q.id] = q.options.map((o) => o.value).filter((v) => chosen.includes(v));
    } else {
      values[q.id] = values[q.id] === value && !advance ? null : value; // a second click clears
    }
    paint();
    notify();
    if (advance && q.kind !== "multiple" && current < questions.length - 1) moveTo(current + 1, true);
  }

  function nudge(q, delta, absolute) {
    const v = values[q.id];
    let next = absolute !== undefined ? absolute : (v === null || v === undefined ? 50 : v) + delta;
    next = Math.max(0, Math.min(100, next));
    setValue(q, next);
  }

  Concord.tasks.questionnaire = {
    mount(container, data, answer, config, onChange) {
      questions = config.questions || [];
      fields = config.fields || [];
      notify = onChange;
      firstShown = (data && data.first_shown) || {};
      current = 0;
      values = {};
      for (const q of questions) {
        const saved = answer && typeof answer === "object" ? answer[q.id] : undefined;
        values[q.id] = saved === undefined ? (q.kind === "multiple" ? [] : null) : saved;
      }
      renderFields(data, config.layout);
      renderQuestions();
      paint();
    },

    answer() {
      const out = {};
      for (const q of questions) {
        let v = values[q.id];
        if (q.kind === "text") v = v && String(v).trim() ? String(v) : null;
        out[q.id] = v === undefined ? null : v;
      }
      return out;
    },

    problem() {
      if (!questions.length) return gettext("This questionnaire has no questions; tell the researcher.");
      for (const [i, q] of questions.entries()) {
        const v = values[q.id];
        if (q.kind === "multiple") {
          const n = (v || []).length;
          if ((q.required || n) && (n < q.min || n > q.max)) {
            return q.min === q.max
              ? fmt(gettext("Question %(n)s: choose %(count)s options."), { n: i + 1, count: q.min })
              : fmt(gettext("Question %(n)s: choose %(min)s to %(max)s options."), { n: i + 1, min: q.min, max: q.max });
          }
          continue;
        }
        if (q.required && !answered(q)) {
          const text = q.kind === "slider"
            ? gettext("Answer question %(n)s (move the slider): %(prompt)s")
            : gettext("Answer question %(n)s: %(prompt)s");
          return fmt(text, { n: i + 1, prompt: q.prompt });
        }
      }
      return null;
    },

    key(event) {
      if (!questions.length) return false;
      const q = questions[current];
      if (event.key === "ArrowDown") { moveTo(current + 1, true); return true; }
      if (event.key === "ArrowUp") { moveTo(current - 1, true); return true; }
      if (q.kind === "slider") {
        const step = event.shiftKey ? 10 : q.step || 1;
        if (event.key === "ArrowRight") { nudge(q, step); return true; }
        if (event.key === "ArrowLeft") { nudge(q, -step); return true; }
        if (event.key === "Home") { nudge(q, 0, 0); return true; }
        if (event.key === "End") { nudge(q, 0, 100); return true; }
        return false;
      }
      const options = choices(q);
      if (!options.length) return false;
      const key = event.key.toLowerCase();
      let choice = options.find((c) => c.key === key);
      if (!choice && q.kind === "pairwise" && /^[1-3]$/.test(key)) choice = options[Number(key) - 1];
      if (!choice) return false;
      choose(q, choice.value, true);
      return true;
    },
  };
})();
