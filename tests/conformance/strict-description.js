#!/usr/bin/env node
// Writes a strict copy of an OpenAPI description (JSON in, JSON out): every object schema
// that lists its properties gets `additionalProperties: false`, the way strict generated
// clients read warp.openapi.yaml. Respect's schema check then fails on any undocumented
// property a documented operation answers with.
'use strict';
const fs = require('node:fs');

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: strict-description.js IN.json OUT.json');
  process.exit(2);
}

function tighten(node) {
  if (Array.isArray(node)) {
    node.forEach(tighten);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (node.properties && typeof node.properties === 'object' && !('additionalProperties' in node)) {
    node.additionalProperties = false;
  }
  Object.values(node).forEach(tighten);
}

const doc = JSON.parse(fs.readFileSync(input, 'utf8'));
// Only schemas: paths and components.schemas hold them; examples are left alone.
tighten(doc.paths);
if (doc.components && doc.components.schemas) tighten(doc.components.schemas);
fs.writeFileSync(output, JSON.stringify(doc, null, 2));
