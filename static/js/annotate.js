/* Concord annotation page: the workflow shared by every task type.
 *
 * - Talks only to the annotator API (next item, assignment, draft, submit, history).
 * - Work is never lost: every change is written to localStorage first, then autosaved to the
 *   server as a draft; a submit stays in a localStorage outbox until the server confirms it, and
 *   the outbox is retried on reconnect and on the next page load.
 * - Time counts only while the page is visible (visibility-aware active time); a submit faster
 *   than the project's minimum time per item asks for a second press first (same for every item).
 * - Batches: the toolbar shows "item k of n" within the batch; when the server stops the annotator
 *   (batch finished, disqualified, qualification) its polite message and completion code replace
 *   the task.
 * - A task type registers a module in Concord.tasks[slug] with:
 *     mount(root, item, answer, config, onChange)  render the item, restore an answer
 *     answer()                                      the current answer object
 *     problem()                                     null, or a message saying what is missing
 *     key(event)                                    optional keyboard handling; true if handled
 *   Modules must render data with textContent only (dataset text is never HTML).
 * - Every word shown is in the annotator's language: gettext / ngettext / interpolate come from
 *   Django's JavaScript catalogue (/jsi18n/, loaded first by the page); task modules use them too.
 * - Flag and skip live here, for every task type: "Flag" opens a form (a reason from the
 *   project's list, words) that keeps the draft; "Skip" (where the project allows it) gives the
 *   item back and loads the next. An answer a reviewer sent back comes first, with their note.
 */
(function () {
  "use strict";

  const cfg = window.CONCORD;
  const store = window.localStorage;
  // Keys carry the user: on a shared browser one person's unsent work is never sent (and lost)
  // under another person's session.
  const OUTBOX = `concord:${cfg.user}:outbox:`;
  const DRAFT = `concord:${cfg.user}:draft:`;
  // 401, or 403 about credentials/CSRF: the session ended. The server did not judge the answer,
  // so it stays in the browser until the person logs in again. (A 403 with another reason, such
  // as a closed study, is the server's answer.)
  const sessionEnded = (r) => (r.status === 401 || r.status === 403) &&
    (!r.data || !r.data.detail || /credentials|CSRF/i.test(r.data.detail));

  const $ = (id) => document.getElementById(id);
  const fmt = (text, values) => interpolate(text, values, true);
  // The history API's status words, as the annotator reads them.
  const HISTORY_STATUS = {
    submitted: pgettext("item status", "submitted"),
    expired: pgettext("item status", "expired"),
    skipped: pgettext("item status", "skipped"),
    saved: pgettext("item status", "saved"),
    "not started": pgettext("item status", "not started"),
  };

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function api(method, url, body) {
    const response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRFToken": csrfToken(),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    if (response.status !== 204) {
      try { data = await response.json(); } catch (e) { data = null; }
    }
    return { status: response.status, ok: response.ok, data };
  }

  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return "10000000-1000-4000-8000-100000000000".replace(/[018]/g, (c) =>
      (c ^ (Math.random() * 16) >> (c / 4)).toString(16));
  }

  // --- active time -------------------------------------------------------------------------
  const clock = {
    base: 0, since: null,
    start(base) { this.base = base || 0; this.since = document.hidden ? null : performance.now(); },
    pause() { if (this.since !== null) { this.base += performance.now() - this.since; this.since = null; } },
    resume() { if (this.since === null && !document.hidden) this.since = performance.now(); },
    ms() { return Math.round(this.base + (this.since === null ? 0 : performance.now() - this.since)); },
  };
  document.addEventListener("visibilitychange", () => (document.hidden ? clock.pause() : clock.resume()));

  // --- state -------------------------------------------------------------------------------
  const state = {
    assignment: null, module: null, revision: 0, saveTimer: null, submitting: false,
    fastConfirmed: null, lastBatch: null, flagMode: "flag", flagging: false,
  };
  const config = JSON.parse($("task-config").textContent);

  function setSaveState(text, kind) {
    const el = $("save-state");
    el.textContent = text;
    el.className = "save-state " + (kind || "");
  }

  function banner(text, kind) {
    const el = $("banner");
    if (!text) { el.hidden = true; return; }
    el.textContent = text;
    el.className = "banner " + (kind || "");
    el.hidden = false;
  }

  function showValidation() {
    const problem = state.module ? state.module.problem() : null;
    $("validation").textContent = problem || gettext("Ready to submit.");
    $("validation").className = "validation " + (problem ? "" : "ok");
    $("submit").disabled = !!problem;
    return problem;
  }

  // --- drafts ------------------------------------------------------------------------------
  function onChange() {
    const a = state.assignment;
    if (!a) return;
    if (cfg.preview) { showValidation(); return; } // a preview stores nothing, not even a draft
    state.revision += 1;
    const draft = { answer: state.module.answer(), time_spent_ms: clock.ms(), revision: state.revision };
    store.setItem(DRAFT + a.id, JSON.stringify(draft));
    setSaveState(gettext("Saving…"));
    showValidation();
    clearTimeout(state.saveTimer);
    state.saveTimer = setTimeout(() => saveDraft(a.id), 600);
  }

  async function saveDraft(id) {
    const raw = store.getItem(DRAFT + id);
    if (!raw) return;
    const draft = JSON.parse(raw);
    try {
      const r = await api("PUT", `/api/assignments/${id}/draft/`, draft);
      if (r.ok) {
        const now = JSON.parse(store.getItem(DRAFT + id) || "null");
        if (now && now.revision <= draft.revision) store.removeItem(DRAFT + id);
        setSaveState(gettext("Draft saved"), "ok");
      } else {
        setSaveState(fmt(gettext("Draft not saved (%(status)s); kept in this browser"), { status: r.status }), "warn");
      }
    } catch (e) {
      setSaveState(gettext("Offline: draft kept in this browser"), "warn");
    }
  }

  // --- outbox (submits waiting for the server) ---------------------------------------------
  function outboxEntries() {
    const entries = [];
    for (let i = 0; i < store.length; i++) {
      const key = store.key(i);
      if (key && key.startsWith(OUTBOX)) entries.push([key, JSON.parse(store.getItem(key))]);
    }
    return entries;
  }

  async function flushOutbox() {
    let pending = 0;
    for (const [key, entry] of outboxEntries()) {
      try {
        const r = await api("POST", `/api/assignments/${entry.assignment}/submit/`, entry.body);
        if (r.ok) store.removeItem(key);
        else if (sessionEnded(r)) {
          pending += 1;
          banner(gettext("Please log in again: an answer is kept in this browser and will be sent then."), "warn");
        } else if (r.status >= 400 && r.status < 500) {
          store.removeItem(key);
          const detail = (r.data && r.data.detail) || gettext("refused");
          banner(fmt(gettext("An answer saved in this browser was refused by the server: %(detail)s"), { detail }), "error");
        } else pending += 1;
      } catch (e) { pending += 1; }
    }
    return pending;
  }
  window.addEventListener("online", () => flushOutbox().then(refreshHistory));

  // --- loading items -----------------------------------------------------------------------
  async function render(data) {
    const localDraft = JSON.parse(store.getItem(DRAFT + data.id) || "null");
    const serverDraft = data.draft;
    let answer = data.answer ? data.answer.answer : null;
    let time = 0; // time is per version: a revision starts counting again
    // Revisions keep counting from the last submit: the server ignores autosaves up to it.
    state.revision = data.submitted_revision || 0;
    // The newest unsent work wins: browser copy, then server draft, then the submitted answer.
    for (const d of [serverDraft, localDraft]) {
      if (d && d.revision >= state.revision) { answer = d.answer; time = d.time_spent_ms; state.revision = d.revision; }
    }
    let preselectedBy = null;
    if (answer === null) {
      // Before anything on the page changes (the page must not look ready before it is).
      // A judge's answer as a starting point, only when the researcher switched it on (204
      // otherwise); the server records that it was shown.
      const pre = await api("POST", `/api/assignments/${data.id}/preselection/`).catch(() => null);
      if (pre && pre.status === 200 && pre.data) { answer = pre.data.answer; preselectedBy = pre.data.judge; }
    }
    state.assignment = data;
    const counts = data.counts || {};
    const b = data.batch;
    const where = !b ? fmt(gettext("Item %(n)s of %(total)s"), { n: data.sequence, total: counts.items || "?" })
      : fmt(b.kind === "qualification"
        ? gettext("Qualification round %(number)s · item %(n)s of %(size)s")
        : gettext("Batch %(number)s · item %(n)s of %(size)s"), { number: b.number, n: b.position, size: b.size });
    $("position").textContent = where + (data.reference ? ` · ${data.reference}` : "") +
      (data.answer ? " · " + fmt(gettext("submitted (version %(version)s) – you can revise it"), { version: data.answer.version }) : "");
    announceBatch(b);
    showSentBack(data.sent_back);
    showFlagAnswers(data.flag_answers);
    showFlagged(data.flags);
    closeFlagPanel(false);
    if ($("flag-toggle")) $("flag-toggle").hidden = false;
    if ($("skip-toggle")) $("skip-toggle").hidden = !!data.answer || !!b;
    $("task").hidden = false;
    $("done").hidden = true;
    $("stop").hidden = true;
    $("submitbar").hidden = false;
    state.module = Concord.tasks[cfg.taskType];
    state.module.mount($("task"), data.item, answer, config, onChange);
    if (preselectedBy) banner(fmt(gettext("Pre-selected by the judge “%(judge)s”: check it and correct it where needed."), { judge: preselectedBy }), "warn");
    clock.start(time);
    setSaveState(localDraft ? gettext("Restored unsaved work from this browser") : "");
    if (localDraft) saveDraft(data.id);
    showValidation();
    // A new item takes the focus from whatever opened it (Submit, a "Previous items" entry), so
    // its keys, and Enter to submit, work at once.
    $("task").focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }

  // A banner when a new qualification round or the main items begin (the previous batch tells).
  function announceBatch(b) {
    const last = state.lastBatch;
    state.lastBatch = b;
    if (!b || !last || (last.kind === b.kind && last.number === b.number)) return;
    if (b.kind === "main" && last.kind === "qualification") {
      banner(gettext("You passed the qualification round. Welcome to the main items!"), "ok");
    } else if (b.kind === "qualification" && last.kind === "qualification") {
      banner(fmt(gettext("That round did not reach the pass mark. Here is round %(number)s: please read the guidelines again."), { number: b.number }), "warn");
    }
  }

  function showSentBack(sent) {
    $("sent-back").hidden = !sent;
    $("sent-back-note").textContent = sent ? sent.note : "";
  }

  // The researchers' answers to this annotator's flags on the item (their own words).
  function showFlagAnswers(answers) {
    const list = $("flag-answers-list");
    list.replaceChildren();
    for (const a of answers || []) {
      const li = document.createElement("li");
      const reason = document.createElement("strong");
      // reason_label: a default reason in the annotator's language (the server translates it).
      const label = a.reason_label || a.reason;
      reason.textContent = label ? label + ": " : "";
      const response = document.createElement("span");
      response.dir = "auto"; // the researchers' own words, in their direction
      response.textContent = a.response;
      li.append(reason, response);
      list.appendChild(li);
    }
    $("flag-answers").hidden = !(answers && answers.length);
  }

  // The annotator's own flags on the item, so a reload still says it is flagged (an open flag
  // first: a second flag is refused until the researchers answer).
  function showFlagged(flags) {
    const all = flags || [];
    const open = all.filter((f) => f.state === "open");
    const shown = open.length ? open : all;
    $("flagged").hidden = !shown.length;
    if (!shown.length) { $("flagged-text").textContent = ""; return; }
    const reasons = [...new Set(shown.map((f) => f.reason_label || f.reason).filter(Boolean))].join(", ");
    let text;
    if (open.length) {
      text = reasons
        ? fmt(gettext("You flagged this item (%(reasons)s). The researchers have not answered yet; your work on it is kept."), { reasons })
        : gettext("You flagged this item. The researchers have not answered yet; your work on it is kept.");
    } else {
      text = reasons
        ? fmt(gettext("You flagged this item (%(reasons)s); the researchers have resolved your flag."), { reasons })
        : gettext("You flagged this item; the researchers have resolved your flag.");
    }
    $("flagged-text").textContent = text;
  }

  // --- flag and skip -----------------------------------------------------------------------
  function openFlagPanel(mode) {
    const panel = $("flag-panel");
    if (!panel || !state.assignment) return;
    state.flagMode = mode;
    const skip = mode === "skip";
    $("flag-heading").textContent = skip ? gettext("Skip this item") : gettext("Flag this item");
    $("flag-intro").textContent = skip
      ? gettext("The item goes to someone else and will not come back to you. A reason helps the researchers (optional).")
      : gettext("Tell the researchers what is wrong. Your work on this item is kept.");
    $("flag-legend").textContent = skip ? gettext("Why? (optional)") : gettext("What is wrong?");
    $("flag-send").textContent = skip ? gettext("Skip item") : gettext("Send flag");
    if ($("flag-skip")) $("flag-skip").hidden = skip || !!state.assignment.answer;
    $("flag-state").textContent = "";
    panel.hidden = false;
    $("flag-toggle").setAttribute("aria-expanded", String(!skip));
    if ($("skip-toggle")) $("skip-toggle").setAttribute("aria-expanded", String(skip));
    const first = panel.querySelector("input[name=flag-reason]");
    if (first) first.focus(); else $("flag-text").focus();
  }

  function closeFlagPanel(refocus) {
    const panel = $("flag-panel");
    if (!panel) return;
    const wasOpen = !panel.hidden;
    panel.hidden = true;
    panel.reset();
    $("flag-toggle").setAttribute("aria-expanded", "false");
    if ($("skip-toggle")) $("skip-toggle").setAttribute("aria-expanded", "false");
    if (refocus && wasOpen) $(state.flagMode === "skip" && $("skip-toggle") ? "skip-toggle" : "flag-toggle").focus();
  }

  async function sendFlag(skip) {
    const a = state.assignment;
    if (!a || state.flagging) return;
    const checked = $("flag-panel").querySelector("input[name=flag-reason]:checked");
    const body = { reason: checked ? checked.value : "", text: $("flag-text").value };
    state.flagging = true;
    try {
      const r = await api("POST", `/api/assignments/${a.id}/${skip ? "skip" : "flag"}/`, body);
      if (r.ok) {
        closeFlagPanel(!skip);
        if (skip) {
          store.removeItem(DRAFT + a.id);
          clearTimeout(state.saveTimer);
          await loadNext();
          banner(gettext("Item skipped: it will not come back to you."), "ok");
          refreshHistory();
        } else {
          const label = checked ? checked.parentElement.textContent.trim() : "";
          a.flags = [...(a.flags || []), { reason: body.reason, reason_label: label, state: "open" }];
          showFlagged(a.flags);
          banner(gettext("Thank you: the researchers will look at this item. Your work on it is kept."), "ok");
        }
      } else {
        const detail = (r.data && r.data.detail) || fmt(gettext("Not sent (%(status)s)."), { status: r.status });
        $("flag-state").textContent = detail;
        $("flag-state").className = "validation warn";
        const field = r.data && r.data.field;
        if (field === "text") $("flag-text").focus();
      }
    } catch (e) {
      $("flag-state").textContent = gettext("You seem to be offline; nothing was sent. Please try again.");
    } finally {
      state.flagging = false;
    }
  }

  function hideTask(position) {
    state.assignment = null;
    showSentBack(null);
    showFlagged(null);
    closeFlagPanel(false);
    if ($("flag-toggle")) $("flag-toggle").hidden = true;
    if ($("skip-toggle")) $("skip-toggle").hidden = true;
    $("task").hidden = true;
    $("submitbar").hidden = true;
    $("position").textContent = position;
  }

  function showStop(stop) {
    hideTask(stop.reason === "batch_complete" ? fmt(gettext("Batch %(number)s complete"), { number: stop.batch }) : gettext("No more items"));
    $("done").hidden = true;
    $("stop").hidden = false;
    $("stop").dataset.reason = stop.reason;
    $("stop-title").textContent = stop.title;
    $("stop-message").textContent = stop.message;
    $("stop-feedback").hidden = !stop.feedback;
    if ($("page-feedback")) $("page-feedback").hidden = !!stop.feedback; // said once, in the panel
    $("stop-feedback-text").textContent = stop.feedback || "";
    $("stop-code").hidden = !stop.code;
    $("stop-code-value").textContent = stop.code || "";
    // A crowd worker's way back to the platform: with the completion code, or, when stopped for
    // good, the platform's screen-out path (Prolific's code or return, MTurk's Return button).
    const back = $("crowd-return");
    if (back) back.hidden = !stop.code;
    const out = $("crowd-return-screened-out");
    if (out) out.hidden = !stop.screened_out;
    $("start-batch").hidden = !stop.can_start_another;
  }

  async function loadNext(body) {
    banner("");
    const r = await api("POST", `/api/projects/${cfg.project}/next/`, body);
    if (r.status === 204) {
      hideTask(gettext("No items left"));
      $("stop").hidden = true;
      $("done").hidden = false;
      return;
    }
    if (!r.ok) { banner((r.data && r.data.detail) || fmt(gettext("Could not load the next item (%(status)s)."), { status: r.status }), "error"); return; }
    if (r.data.stop) { showStop(r.data.stop); return; }
    await render(r.data);
  }

  async function open(id) {
    const r = await api("GET", `/api/assignments/${id}/`);
    if (!r.ok) { banner(fmt(gettext("Could not open that item (%(status)s)."), { status: r.status }), "error"); return; }
    await render(r.data);
  }

  async function submit() {
    if (!state.assignment || state.submitting) return;
    const problem = showValidation();
    if (problem) { banner(problem, "error"); return; }
    if (cfg.preview) {
      banner(gettext("Preview: the server would accept this answer's shape. Nothing was stored."), "ok");
      return;
    }
    const spent = Math.round(clock.ms() / 1000);
    if (cfg.minSeconds && spent < cfg.minSeconds && state.fastConfirmed !== state.assignment.id) {
      state.fastConfirmed = state.assignment.id;
      // Said next to the Submit button the annotator just pressed (an aria-live region).
      const validation = $("validation");
      validation.textContent = fmt(gettext("You spent %(spent)s s on this item; this study asks for at least " +
        "%(min)s s. Please check your answer, then press Submit again."), { spent, min: cfg.minSeconds });
      validation.className = "validation warn";
      return;
    }
    state.submitting = true;
    $("submit").disabled = true;
    const a = state.assignment;
    const body = { answer: state.module.answer(), time_spent_ms: clock.ms(), submission_id: uuid(), revision: state.revision };
    const key = OUTBOX + a.id;
    store.setItem(key, JSON.stringify({ assignment: a.id, body }));
    clearTimeout(state.saveTimer);
    try {
      const r = await api("POST", `/api/assignments/${a.id}/submit/`, body);
      if (r.ok) {
        store.removeItem(key);
        store.removeItem(DRAFT + a.id);
        banner("");
        setSaveState(gettext("Submitted"), "ok");
        await loadNext();
        refreshHistory();
      } else if (sessionEnded(r)) {
        banner(gettext("Your session has ended. Please log in again in another tab: your answer is kept in this browser and will be sent then."), "warn");
      } else if (r.status >= 400 && r.status < 500) {
        store.removeItem(key);
        const errors = r.data && r.data.errors ? " " + JSON.stringify(r.data.errors) : "";
        banner(((r.data && r.data.detail) || gettext("The answer was refused.")) + errors, "error");
      } else {
        banner(gettext("The server had a problem; your answer is kept in this browser and will be sent again."), "warn");
        setTimeout(() => flushOutbox(), 5000);
      }
    } catch (e) {
      banner(gettext("You seem to be offline. Your answer is kept in this browser and will be sent when the connection returns."), "warn");
    } finally {
      state.submitting = false;
      showValidation();
    }
  }

  async function refreshHistory() {
    const r = await api("GET", `/api/projects/${cfg.project}/history/`);
    if (!r.ok) return;
    const list = $("history-list");
    list.replaceChildren();
    for (const entry of r.data.results) {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "link";
      // The headline is the item's own text: its own direction (dir="auto"), in a <bdi>.
      const headline = document.createElement("bdi");
      headline.dir = "auto";
      headline.textContent = entry.headline || "";
      button.append(
        fmt(gettext("Item %(n)s"), { n: entry.sequence }) + ` ${entry.reference || ""} · `,
        headline,
        ` · ${HISTORY_STATUS[entry.status] || entry.status}`,
      );
      button.addEventListener("click", () => open(entry.id));
      li.appendChild(button);
      list.appendChild(li);
    }
  }

  function togglePanel(id, button) {
    const panel = $(id);
    panel.hidden = !panel.hidden;
    if (button) button.setAttribute("aria-expanded", String(!panel.hidden));
  }

  // Enter submits only when no control has the focus, or Submit has it. A focused control keeps
  // Enter for itself: "Guidelines" opens the guidelines, a sentence toggles. After a new item
  // the focus is on the item itself, so Enter submits; Esc takes the focus off a control.
  const CONTROL = "button, a[href], input, select, textarea, summary, [contenteditable=''], " +
    "[contenteditable=true], [role=button], [role=link], [role=tab], [role=option], " +
    "[role=gridcell], [role=menuitem], [role=checkbox], [role=radio], [tabindex]:not(#task)";
  // Custom controls (a <li role="checkbox">) get the keys native ones have: Space toggles,
  // Enter presses a role=button.
  function pressCustomControl(event) {
    const target = event.target;
    const role = target.getAttribute && target.getAttribute("role");
    if (!role || /^(button|a|input|select|textarea|summary)$/i.test(target.tagName)) return false;
    const space = event.key === " " && ["checkbox", "radio", "option", "button", "gridcell"].includes(role);
    const enter = event.key === "Enter" && ["checkbox", "radio", "option", "button"].includes(role);
    if (!space && !enter) return false;
    target.click();
    return true;
  }

  function onKey(event) {
    if (!state.assignment || !state.module) return;
    const target = event.target;
    const panel = $("flag-panel");
    if (panel && target.closest && target.closest("#flag-panel")) {
      if (event.key === "Escape") { event.preventDefault(); closeFlagPanel(true); }
      return; // the form's own keys (Enter sends it)
    }
    const tag = (target.tagName || "").toLowerCase();
    const typing = tag === "textarea" || tag === "select" || target.isContentEditable ||
      (tag === "input" && !["range", "checkbox", "radio"].includes(target.type));
    if (event.altKey) return;
    if (event.ctrlKey || event.metaKey) {
      // Undo and redo (Ctrl+Z, Ctrl+Shift+Z, Ctrl+Y) go to the task, except in a text field,
      // which has its own; every other browser shortcut is left alone.
      const undo = /^[zy]$/i.test(event.key);
      if (undo && !typing && state.module.key && state.module.key(event)) event.preventDefault();
      return;
    }
    if (pressCustomControl(event)) { event.preventDefault(); return; }
    if (event.key === "Enter" && !event.shiftKey) {
      const control = target.closest ? target.closest(CONTROL) : null;
      if (control && control.id !== "submit") return;
      event.preventDefault();
      submit();
      return;
    }
    if (event.key === "Escape" && target.closest && target.closest(CONTROL)) {
      target.blur(); // back to the item's keys, and Enter submits again
      $("task").focus({ preventScroll: true });
      if (typing) return;
    }
    if (typing) return;
    if (state.module.key && state.module.key(event)) event.preventDefault();
  }

  // A researcher's preview: the item comes with the page; no assignment, draft or answer exists.
  function previewItem() {
    const preview = JSON.parse($("preview-data").textContent);
    state.assignment = { id: "preview" };
    state.module = Concord.tasks[cfg.taskType];
    $("position").textContent = preview.position;
    $("history-toggle").hidden = true;
    $("task").hidden = false;
    $("submitbar").hidden = false;
    state.module.mount($("task"), preview.item, null, config, onChange);
    showValidation();
  }

  window.Concord = {
    tasks: {},
    onChange,
    async start() {
      $("submit").addEventListener("click", submit);
      $("guidelines-toggle").addEventListener("click", (e) => togglePanel("guidelines", e.currentTarget));
      $("history-toggle").addEventListener("click", (e) => { togglePanel("history", e.currentTarget); refreshHistory(); });
      $("start-batch").addEventListener("click", () => loadNext({ start_batch: true }));
      $("copy-code").addEventListener("click", () => {
        const code = $("stop-code-value").textContent;
        if (navigator.clipboard) navigator.clipboard.writeText(code).catch(() => {});
        $("copy-code").textContent = gettext("Copied");
      });
      document.addEventListener("keydown", onKey);
      if (cfg.preview) { previewItem(); return; }
      $("flag-toggle").addEventListener("click", () => ($("flag-panel").hidden || state.flagMode !== "flag" ? openFlagPanel("flag") : closeFlagPanel(true)));
      if ($("skip-toggle")) $("skip-toggle").addEventListener("click", () => ($("flag-panel").hidden || state.flagMode !== "skip" ? openFlagPanel("skip") : closeFlagPanel(true)));
      $("flag-panel").addEventListener("submit", (event) => { event.preventDefault(); sendFlag(state.flagMode === "skip"); });
      if ($("flag-skip")) $("flag-skip").addEventListener("click", () => sendFlag(true));
      $("flag-cancel").addEventListener("click", () => closeFlagPanel(true));
      window.addEventListener("beforeunload", () => { if (state.assignment) saveDraft(state.assignment.id); });
      const pending = await flushOutbox().catch(() => 1);
      if (pending) banner(gettext("Some answers are still waiting to be sent; they will be retried."), "warn");
      if (cfg.reopen) await open(cfg.reopen); else await loadNext();
    },
    submit,
    open,
  };
})();
