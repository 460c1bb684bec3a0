// The shipped entry: src/main.ts and what it imports, as one ES module at dist/main.js (docs/performance.md,
// "What a pod pays for the sidecar"). Node loads one file instead of some two hundred modules, which costs about 9 MB less
// resident memory at idle. `yaml`, `jose` and `iovalkey` stay outside: they are imported only by
// the configurations that use them (a file, private_key_jwt or DPoP, a token store), from
// node_modules as before. The OpenTelemetry API stays outside too: prom-client requires it at
// start, as it did when bundled; tracing uses no OpenTelemetry package. The rest of dist/ (the mock, the
// demo) is the TypeScript compiler's output, built first.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/main.js',
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  external: ['yaml', 'jose', 'iovalkey', '@opentelemetry/*'],
  banner: {
    js: [
      // Before any dependency runs: on an older Node they fail with a page of minified source.
      'if (Number(process.versions.node.split(".")[0]) < 22) {',
      '  process.stderr.write(`ticket-auth-proxy needs Node.js 22 or later; this is Node.js ${process.versions.node}\\n`);',
      '  process.exit(1);',
      '}',
      // The dependencies are CommonJS modules that call require(); an ES module has none of its own.
      "import { createRequire as __createRequire } from 'node:module';",
      'const require = __createRequire(import.meta.url);',
    ].join('\n'),
  },
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
});
