/* Toy task type "yes_no": one statement, yes or no (keys y / n). */
(function () {
  "use strict";
  let chosen = null;
  let changed = () => {};
  const radios = () => document.querySelectorAll('input[name="yn"]');
  const module = {
    mount(root, item, answer, config, onChange) {
      changed = onChange;
      document.getElementById("yn-question").textContent = config.question;
      document.getElementById("yn-statement").textContent = item.statement;
      chosen = answer && typeof answer.answer === "boolean" ? answer.answer : null;
      radios().forEach((r) => {
        r.checked = chosen !== null && (r.value === "yes") === chosen;
        r.onchange = () => { chosen = r.value === "yes"; changed(); };
      });
    },
    answer() { return chosen === null ? {} : {answer: chosen}; },
    problem() { return chosen === null ? "Choose yes or no." : null; },
    key(event) {
      if (event.key !== "y" && event.key !== "n") return false;
      chosen = event.key === "y";
      radios().forEach((r) => { r.checked = (r.value === "yes") === chosen; });
      changed();
      return true;
    },
  };
  window.Concord.tasks = window.Concord.tasks || {};
  window.Concord.tasks.yes_no = module;
})();
