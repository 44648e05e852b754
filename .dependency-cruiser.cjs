// The layering of ARCHITECTURE.md as rules; `pnpm lint:arch` fails on a violation.
//
//   contract, outbox          the published libraries: import nothing of ours
//   migrations                the schema and its types (uses outbox's types)
//   runtime                   shared mechanisms (backoff, periodic services, events, logging)
//   providers                 channel adapters; never the dispatcher
//   relay, dispatcher, api    the roles: never each other
//   cli                       the only place that wires roles together
//
// Paths are resolved ones: `@notify/relay` resolves through the workspace link to
// packages/relay/src (the `@notify/source` export condition), so rules speak of directories.
const SRC = '^(packages/[^/]+|migrations)/src/';
const notTest = '\\.test\\.ts$|/testing/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles make load order and layering depend on luck.',
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: 'libraries-import-nothing-of-ours',
      severity: 'error',
      comment: '@notify/outbox and @notify/contract are installed by other teams: they stand alone.',
      from: { path: '^packages/(outbox|contract)/src/' },
      to: { path: '^(packages|migrations)/', pathNot: '^packages/$1/' },
    },
    {
      name: 'providers-never-import-dispatcher',
      severity: 'error',
      comment: 'Providers are a library the dispatcher uses, not the other way round.',
      from: { path: '^packages/providers/' },
      to: { path: '^packages/dispatcher/' },
    },
    {
      name: 'only-cli-wires-roles',
      severity: 'error',
      comment: 'The relay, the dispatcher and the API know nothing of each other; packages/cli composes them.',
      from: { path: '^packages/(relay|dispatcher|api)/src/', pathNot: notTest },
      to: { path: '^packages/(relay|dispatcher|api)/', pathNot: '^packages/$1/' },
    },
    {
      name: 'no-upward-imports',
      severity: 'error',
      comment: 'A lower layer never imports a higher one (see the table at the top of this file).',
      from: { path: '^(migrations|packages/(runtime|providers|relay|dispatcher|api))/src/', pathNot: notTest },
      to: { path: '^packages/cli/' },
    },
    {
      name: 'shared-layers-import-no-roles',
      severity: 'error',
      comment: 'migrations, runtime and providers sit below the roles.',
      from: { path: '^(migrations|packages/(runtime|providers))/src/' },
      to: { path: '^packages/(relay|dispatcher|api|cli)/' },
    },
    {
      name: 'no-relative-import-across-packages',
      severity: 'error',
      comment: 'Another package is imported by its name, through its `exports`; a relative path reaches past them.',
      from: { path: '^(packages/([^/]+)|migrations)/' },
      to: { dependencyTypes: ['local'], path: '^(packages|migrations)/', pathNot: '^$1/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve, e.g. a path of another package past its `exports` map.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    combinedDependencies: false,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['@notify/source', 'import', 'types', 'node', 'default'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts'],
      mainFields: ['module', 'main', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
