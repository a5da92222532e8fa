/* Argument structures in the browser: the compact text form and the well-formedness check.
 *
 * A mirror of annotation/argument_graph.py (the server runs that one on submit); the
 * messages, their order and the parser's behaviour are the same, which
 * tests/annotation/test_argument_graph_js_parity.py checks by running this file under Node.
 * Exposed as window.ConcordArgumentGraph (and module.exports under Node). */
(function (root) {
  "use strict";

  // Messages in the annotator's language: Django's JavaScript catalogue, looked up when a
  // message is made (the page loads the catalogue after this file). Under Node (the parity
  // test) there is none, and the messages are graph.py's English ones.
  const gettext = (text) => (typeof root.gettext === "function" ? root.gettext(text) : text);
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (all, key) => String(values[key]));
  const theEnd = () => gettext("the end");

  const CLAIM = "claim";
  const ID = "[A-Za-z0-9_]+(?:[.\\-][A-Za-z0-9_]+)*";
  const ID_RE = new RegExp("^" + ID + "$");
  const TOKEN_RE = new RegExp("\\s*(?:(->)|(" + ID + ")|([(),;])|(\\S))", "y");

  function isValidId(value) { return ID_RE.test(value) && value.toLowerCase() !== CLAIM; }

  function node(value) {
    const text = String(value).trim();
    return text.toLowerCase() === CLAIM ? CLAIM : text;
  }

  function normaliseSteps(steps) {
    return steps.map((step) => {
      const premises = [];
      for (const p of step.premises || []) {
        const n = node(p);
        if (n && !premises.includes(n)) premises.push(n);
      }
      return { premises, conclusion: node(step.conclusion || "") };
    });
  }

  // --- compact text form ------------------------------------------------------------------
  class StructureSyntaxError extends Error {
    constructor(message, column) {
      super(fmt(gettext("%(message)s (column %(column)s)"), { message, column }));
      this.detail = message;
      this.column = column;
    }
  }

  function repr(value) { return "'" + value + "'"; }

  function tokens(text) {
    const result = [];
    let position = 0;
    while (position < text.length) {
      TOKEN_RE.lastIndex = position;
      const match = TOKEN_RE.exec(text);
      if (!match) break; // only trailing whitespace is left
      const column = match.index + match[0].length - (match[1] || match[2] || match[3] || match[4]).length + 1;
      if (match[4] !== undefined) throw new StructureSyntaxError(fmt(gettext("unexpected character %(found)s"), { found: repr(match[4]) }), column);
      if (match[1] !== undefined) result.push(["arrow", match[1], column]);
      else if (match[2] !== undefined) result.push(["id", match[2], column]);
      else result.push(["punct", match[3], column]);
      position = TOKEN_RE.lastIndex;
    }
    return result;
  }

  function parseCompact(text) {
    const toks = tokens(text);
    const endColumn = text.replace(/\s+$/, "").length + 1;
    const steps = [];
    let index = 0;
    const peek = () => (index < toks.length ? toks[index] : null);

    function group() {
      const token = peek();
      if (!token) throw new StructureSyntaxError(gettext("expected an evidence id, 'claim' or '('"), endColumn);
      const [kind, value, column] = token;
      if (kind === "id") { index += 1; return [node(value)]; }
      if (value !== "(") throw new StructureSyntaxError(fmt(gettext("expected an evidence id, 'claim' or '(' but found %(found)s"), { found: repr(value) }), column);
      index += 1;
      const members = [];
      for (;;) {
        let t = peek();
        if (!t || t[0] !== "id") {
          throw new StructureSyntaxError(
            fmt(gettext("expected an evidence id inside '(' but found %(found)s"), { found: t ? repr(t[1]) : theEnd() }), t ? t[2] : endColumn);
        }
        members.push(node(t[1]));
        index += 1;
        t = peek();
        if (t && t[1] === ",") { index += 1; continue; }
        if (t && t[1] === ")") { index += 1; return members; }
        throw new StructureSyntaxError(fmt(gettext("expected ',' or ')' but found %(found)s"), { found: t ? repr(t[1]) : theEnd() }), t ? t[2] : endColumn);
      }
    }

    if (!toks.length) return [];
    while (index < toks.length) {
      const chainColumn = toks[index][2];
      let left = group();
      let arrows = 0;
      let token;
      while ((token = peek()) && token[0] === "arrow") {
        index += 1;
        const right = group();
        for (const conclusion of right) steps.push({ premises: Array.from(new Set(left)), conclusion });
        left = right;
        arrows += 1;
      }
      token = peek();
      if (token && token[1] !== ";") throw new StructureSyntaxError(fmt(gettext("expected '->' or ';' but found %(found)s"), { found: repr(token[1]) }), token[2]);
      if (arrows === 0) throw new StructureSyntaxError(gettext("a part without '->' (write premises -> conclusion)"), chainColumn);
      if (!token) break;
      index += 1;
    }
    return steps;
  }

  function groupText(nodes) { return nodes.length === 1 ? nodes[0] : "(" + nodes.join(", ") + ")"; }

  function toCompact(steps) {
    const chains = [];
    let previous = null;
    for (const step of steps) {
      if (previous && step.premises.length === 1 && step.premises[0] === previous.conclusion) {
        chains[chains.length - 1] += ` -> ${step.conclusion}`;
      } else {
        chains.push(`${groupText(step.premises)} -> ${step.conclusion}`);
      }
      previous = step;
    }
    return chains.join("; ");
  }

  // --- the check ----------------------------------------------------------------------------
  function problem(code, message, step, nodes) {
    return { code, message, step: step === undefined ? null : step, nodes: nodes || [] };
  }

  function joinNodes(nodes) { return nodes.map((n) => (n === CLAIM ? gettext("the claim") : n)).join(", "); }

  function reachable(start, successors) {
    const seen = new Set();
    const stack = [...successors.get(start)];
    while (stack.length) {
      const n = stack.pop();
      if (!seen.has(n)) { seen.add(n); stack.push(...successors.get(n)); }
    }
    return seen;
  }

  function predecessorsOf(order, successors) {
    const predecessors = new Map(order.map((n) => [n, []]));
    for (const n of order) for (const next of successors.get(n)) predecessors.get(next).push(n);
    return predecessors;
  }

  function cycles(order, successors) {
    const found = [];
    const done = new Set();
    for (const start of order) {
      if (done.has(start)) continue;
      const forward = reachable(start, successors);
      if (!forward.has(start)) continue;
      const backward = reachable(start, predecessorsOf(order, successors));
      const members = new Set([...forward].filter((n) => backward.has(n)));
      members.forEach((n) => done.add(n));
      const parent = new Map();
      const queue = [start];
      let last = null;
      while (queue.length && last === null) {
        const n = queue.shift();
        for (const next of successors.get(n)) {
          if (!members.has(next)) continue;
          if (next === start) { last = n; break; }
          if (!parent.has(next)) { parent.set(next, n); queue.push(next); }
        }
      }
      const back = [];
      let n = last;
      while (n !== start) { back.push(n); n = parent.get(n); }
      found.push([start, ...back.reverse(), start]);
    }
    return found;
  }

  function components(nodes, successors) {
    const neighbours = new Map([...successors.keys()].map((n) => [n, new Set()]));
    for (const [n, nexts] of successors) for (const next of nexts) { neighbours.get(n).add(next); neighbours.get(next).add(n); }
    const component = new Map();
    nodes.forEach((start, number) => {
      if (component.has(start)) return;
      const stack = [start];
      while (stack.length) {
        const current = stack.pop();
        if (component.has(current)) continue;
        component.set(current, number);
        stack.push(...neighbours.get(current));
      }
    });
    return component;
  }

  function checkStructure(evidenceIds, rawSteps, requireAllEvidence) {
    if (requireAllEvidence === undefined) requireAllEvidence = true;
    const steps = normaliseSteps(rawSteps);
    const known = Array.from(new Set(evidenceIds));
    const knownSet = new Set(known);
    const problems = [];

    const seenSteps = new Map();
    steps.forEach((step, i) => {
      const number = i + 1;
      const { premises, conclusion } = step;
      if (!premises.length) {
        problems.push(problem("no_premises",
          fmt(gettext("Step %(n)s has no premises: choose at least one statement that supports its conclusion."), { n: number }), i));
      }
      for (const premise of premises) {
        if (premise === CLAIM) {
          problems.push(problem("claim_as_premise",
            fmt(gettext("Step %(n)s uses the claim as a premise; the claim can only be a conclusion."), { n: number }), i, [CLAIM]));
        } else if (!knownSet.has(premise)) {
          problems.push(problem("unknown_id", fmt(gettext("Step %(n)s uses %(id)s, which is not an evidence id."), { n: number, id: premise }), i, [premise]));
        }
      }
      if (!conclusion) problems.push(problem("no_conclusion", fmt(gettext("Step %(n)s has no conclusion."), { n: number }), i));
      else if (conclusion !== CLAIM && !knownSet.has(conclusion)) {
        problems.push(problem("unknown_id", fmt(gettext("Step %(n)s concludes %(id)s, which is not an evidence id."), { n: number, id: conclusion }), i, [conclusion]));
      }
      const key = [...premises].sort().join("\u0000") + "\u0001" + conclusion;
      if (premises.length && conclusion && seenSteps.has(key)) {
        problems.push(problem("duplicate_step", fmt(gettext("Step %(n)s repeats step %(earlier)s."), { n: number, earlier: seenSteps.get(key) + 1 }), i));
      } else if (!seenSteps.has(key)) {
        seenSteps.set(key, i);
      }
    });

    if (!steps.length) {
      problems.push(problem("empty", gettext("The structure has no steps yet: link the evidence to the claim.")));
      return problems;
    }
    if (!steps.some((s) => s.conclusion === CLAIM)) {
      problems.push(problem("no_claim_step", gettext("No step concludes the claim yet: link the final statements to the claim.")));
    }

    // Unknown ids stay in the graph as nodes (see the Python twin for why).
    const unknown = [];
    for (const step of steps) {
      for (const n of [...step.premises, step.conclusion]) {
        if (n && n !== CLAIM && !knownSet.has(n) && !unknown.includes(n)) unknown.push(n);
      }
    }
    const order = [...known, ...unknown, CLAIM];
    const rank = new Map(order.map((n, i) => [n, i]));
    const successorSets = new Map(order.map((n) => [n, new Set()]));
    for (const step of steps) {
      if (!rank.has(step.conclusion)) continue;
      for (const premise of step.premises) {
        if (rank.has(premise) && premise !== CLAIM) successorSets.get(premise).add(step.conclusion);
      }
    }
    const successors = new Map(order.map((n) => [n, [...successorSets.get(n)].sort((a, b) => rank.get(a) - rank.get(b))]));

    for (const cycle of cycles(order, successors)) {
      problems.push(problem("cycle",
        fmt(gettext("Cycle: %(cycle)s. A statement cannot support itself, even through other steps."), { cycle: cycle.join(" → ") }), null, cycle.slice(0, -1)));
    }

    const used = new Set();
    for (const s of steps) { s.premises.forEach((p) => used.add(p)); used.add(s.conclusion); }
    const nodes = known.filter((n) => requireAllEvidence || used.has(n));
    const component = components([...nodes, CLAIM], successors);
    const claimPart = component.get(CLAIM);
    const reaches = reachable(CLAIM, predecessorsOf(order, successors));
    const reported = new Set();
    for (const n of nodes) {
      const part = component.get(n);
      if (part === claimPart || reported.has(part)) continue;
      reported.add(part);
      const members = nodes.filter((m) => component.get(m) === part);
      if (members.length === 1 && !used.has(n)) {
        problems.push(problem("unused", fmt(gettext("%(id)s is not used in any step: link it to the structure or delete it in stage 1."), { id: n }), null, [n]));
      } else {
        problems.push(problem("disconnected", members.length > 1
          ? fmt(gettext("%(ids)s form a part that is not connected to the claim."), { ids: joinNodes(members) })
          : fmt(gettext("%(id)s is not connected to the claim."), { id: n }), null, members));
      }
    }
    for (const n of nodes) {
      if (component.get(n) === claimPart && !reaches.has(n)) {
        problems.push(problem("not_reaching_claim",
          fmt(gettext("%(id)s does not lead to the claim: use it as a premise of a step towards the claim."), { id: n }), null, [n]));
      }
    }
    return problems;
  }

  const api = { CLAIM, isValidId, normaliseSteps, parseCompact, toCompact, checkStructure, StructureSyntaxError };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.ConcordArgumentGraph = api;
})(typeof window !== "undefined" ? window : globalThis);
