// Parses LogQL and PromQL expressions with the official lezer grammars and reports where each
// one fails to parse.
//
// argv[2]: the folder the npm packages are installed in (its node_modules).
// stdin:   {"queries": [{"lang": "logql" | "promql", "expr": "..."}]}
// stdout:  [{"top": "<top node>", "errors": [<offset>, ...]}], one per query, in order.
const { createRequire } = require('module');
const path = require('path');

const load = createRequire(path.join(process.argv[2], 'package.json'));
const parsers = {
  logql: { parser: load('@grafana/lezer-logql').parser, top: 'LogQL' },
  promql: { parser: load('@prometheus-io/lezer-promql').parser, top: 'PromQL' },
};

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  const answers = JSON.parse(input).queries.map(({ lang, expr }) => {
    const grammar = parsers[lang];
    if (!grammar) {
      return { top: '', errors: [0] };
    }
    const tree = grammar.parser.parse(expr);
    const errors = [];
    tree.iterate({
      enter(node) {
        if (node.type.isError) {
          errors.push(node.from);
        }
      },
    });
    const top = tree.topNode.name === grammar.top ? grammar.top : tree.topNode.name;
    return { top, errors };
  });
  process.stdout.write(JSON.stringify(answers));
});
