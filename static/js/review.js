/* Concord review page: a reviewer records the final answer for an item annotators disagree on.
 *
 * The task type's own module renders the item (the same UI annotators used); "Use this answer"
 * loads an annotator's answer into it to start from. The answer is validated by the server like
 * an annotator's. Dataset text reaches the page only through the task module (textContent).
 */
(function () {
  "use strict";

  window.Concord = window.Concord || { tasks: {} };
  const $ = (id) => document.getElementById(id);

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // Words from Django's JavaScript catalogue (/jsi18n/, loaded before this file).
  const fmt = (text, values) => interpolate(text, values, true);
  let data, config, module;

  function showValidation() {
    const problem = module.problem();
    $("validation").textContent = problem || gettext("Ready to record.");
    $("validation").className = "validation " + (problem ? "" : "ok");
    $("submit").disabled = !!problem;
    return problem;
  }

  function mount(answer) {
    module.mount($("task"), data.item, answer, config, showValidation);
    showValidation();
  }

  function say(text, kind) {
    const el = $("review-state");
    el.textContent = text;
    el.className = "banner " + (kind || "");
    el.hidden = !text;
  }

  async function record() {
    if (showValidation()) return;
    $("submit").disabled = true;
    const response = await fetch(data.submit_url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ answer: module.answer(), note: $("review-note").value }),
    });
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (response.ok) {
      say(fmt(gettext("Final answer recorded (version %(version)s). Opening the next disputed item…"), { version: body.version }), "ok");
      setTimeout(() => { window.location.assign(data.next_url); }, 900);
      return;
    } else {
      const errors = body && body.errors ? " " + JSON.stringify(body.errors) : "";
      say(((body && body.detail) || fmt(gettext("Not recorded (%(status)s)."), { status: response.status })) + errors, "error");
    }
    showValidation();
  }

  // Send an annotator's answer back to them with a note (it comes first in their queue).
  function setUpSendBack() {
    const form = $("send-back-form");
    let chosen = null;
    document.querySelectorAll(".send-back-open").forEach((button) => {
      button.addEventListener("click", () => {
        chosen = button;
        form.hidden = false;
        $("send-back-heading").textContent = fmt(gettext("Send the answer of %(annotator)s back"), { annotator: button.dataset.annotator });
        $("send-back-note").focus();
      });
    });
    $("send-back-cancel").addEventListener("click", () => {
      form.hidden = true;
      if (chosen) chosen.focus();
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!chosen) return;
      const response = await fetch(data.send_back_url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ annotation: Number(chosen.dataset.annotation), note: $("send-back-note").value }),
      });
      let body = null;
      try { body = await response.json(); } catch (e) { body = null; }
      if (response.ok) {
        form.hidden = true;
        $("send-back-note").value = "";
        chosen.disabled = true;
        chosen.textContent = gettext("Sent back");
        say(fmt(gettext("Sent back to %(annotator)s: it is first in their queue, with your note."), { annotator: chosen.dataset.annotator }), "ok");
      } else {
        say((body && body.detail) || fmt(gettext("Not sent back (%(status)s)."), { status: response.status }), "error");
      }
    });
  }

  window.ConcordReview = {
    start() {
      data = JSON.parse($("review-data").textContent);
      config = JSON.parse($("task-config").textContent);
      module = Concord.tasks[data.task_type];
      $("task").hidden = false;
      $("review-note").value = data.note || "";
      mount(data.initial);
      document.querySelectorAll(".use-answer").forEach((button) => {
        button.addEventListener("click", () => {
          mount(data.answers[Number(button.dataset.index)]);
          say(fmt(gettext("Loaded the answer of %(annotator)s; change it if needed, then record it."), { annotator: button.dataset.annotator }));
        });
      });
      $("submit").addEventListener("click", record);
      setUpSendBack();
      $("guidelines-toggle").addEventListener("click", (event) => {
        const panel = $("guidelines");
        panel.hidden = !panel.hidden;
        event.currentTarget.setAttribute("aria-expanded", String(!panel.hidden));
      });
      document.addEventListener("keydown", (event) => {
        const tag = (event.target.tagName || "").toLowerCase();
        if (tag === "input" || tag === "textarea" || event.ctrlKey || event.metaKey || event.altKey) return;
        if (module.key && module.key(event)) event.preventDefault();
      });
    },
  };
})();
