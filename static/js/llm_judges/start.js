/* Judges page: a run with no item kind ticked, no group and no ids covers every item of the
 * project (a costly LLM run on everything), so the page asks before starting it. */
(function () {
  "use strict";

  const form = document.querySelector("form.judge-start");
  if (!form) return;
  form.addEventListener("submit", (event) => {
    if (event.submitter && event.submitter.value === "estimate") return; // costs nothing
    const kinds = form.querySelectorAll("input[name=kind]:checked").length;
    const group = form.querySelector("[name=group]");
    const ids = form.querySelector("[name=external_ids]");
    const narrowed = kinds || (group && group.value) || (ids && ids.value.trim());
    if (narrowed) return;
    const total = form.dataset.items || "every";
    if (!window.confirm(`No item kind, group or id is chosen: the judge will run on all ${total} item${total === "1" ? "" : "s"} of this project. Start it?`)) {
      event.preventDefault();
    }
  });
})();
