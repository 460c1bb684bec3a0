/**
 * The verification that docs/releases.md shows (its cosign lines) and the Kyverno policy of
 * examples/kyverno name the identity that signs a release: the release workflow's file, in the
 * repository the image's labels name, at a release tag vX.Y.Z, with GitHub's OIDC issuer; and the
 * registry and image the workflow pushes to. Neither cosign nor Kyverno runs here: what they would
 * be told is checked against what the workflow does. And the page's "Protecting releases" names
 * what guards the workflow: the environment its signing jobs run in, the tag ruleset for the tags
 * it runs on, and what the signature's certificate lets a verifier pin.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { readDoc, rowsOf, section } from '../helpers/docs.js';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

const WORKFLOW_PATH = '.github/workflows/release.yml';
const ISSUER = 'https://token.actions.githubusercontent.com';
const POLICY_FILE = 'examples/kyverno/verify-ticket-auth-proxy.yaml';

interface ReleaseWorkflow {
  on: Record<string, unknown> & { push: { tags: string[] } };
  env: { IMAGE: string; CHARTS: string };
  jobs: Record<
    string,
    { permissions?: Record<string, string>; environment?: string; steps: { uses?: string; run?: string; with?: Record<string, unknown> }[] }
  >;
}
const workflow = parseYaml(read(WORKFLOW_PATH)) as ReleaseWorkflow;
const IMAGE = workflow.env.IMAGE;
const CHART = `${workflow.env.CHARTS.replace(/^oci:\/\//, '')}/ticket-auth-proxy`;
const VERSION = (JSON.parse(read('package.json')) as { version: string }).version;
/** The release this tree makes: its version without a pre-release (0.1.1 for 0.1.1-dev). */
const RELEASE_VERSION = VERSION.replace(/-.*$/, '');

/** owner/name of the repository the image's source label names. */
const REPOSITORY = /org\.opencontainers\.image\.source="https:\/\/github\.com\/([^"/]+\/[^"/]+)"/.exec(read('Dockerfile'))![1]!;

/** The certificate identity of the release workflow at the tag of a version (its job_workflow_ref as a URL). */
const identity = (repository: string, workflowPath: string, ref: string): string =>
  `https://github.com/${repository}/${workflowPath}@${ref}`;
const RELEASE = identity(REPOSITORY, WORKFLOW_PATH, `refs/tags/v${RELEASE_VERSION}`);
// Identities that must not pass for a release's: another ref, workflow or repository, a tag that
// is not a release's (a pre-release, a name that only starts like one), and look-alikes of the
// URL's dots.
const IMPOSTORS = [
  identity(REPOSITORY, WORKFLOW_PATH, 'refs/heads/main'),
  identity(REPOSITORY, WORKFLOW_PATH, `refs/heads/v${RELEASE_VERSION}`),
  identity(REPOSITORY, '.github/workflows/ci.yml', `refs/tags/v${RELEASE_VERSION}`),
  identity(`someone-else/${REPOSITORY.split('/')[1]}`, WORKFLOW_PATH, `refs/tags/v${RELEASE_VERSION}`),
  `https://github.com/evil/x/.github/workflows/release.yml@refs/heads/${REPOSITORY}/${WORKFLOW_PATH}@refs/tags/v${RELEASE_VERSION}`,
  identity(REPOSITORY, WORKFLOW_PATH, `refs/tags/v${RELEASE_VERSION}-dev`),
  identity(REPOSITORY, WORKFLOW_PATH, `refs/tags/v${RELEASE_VERSION}-rc.1`),
  identity(REPOSITORY, WORKFLOW_PATH, `refs/tags/v${RELEASE_VERSION}/evil`),
  identity(REPOSITORY, WORKFLOW_PATH, 'refs/tags/vnext'),
  identity(REPOSITORY, WORKFLOW_PATH, 'refs/tags/v1'),
  RELEASE.replace('github.com', 'githubXcom'),
  RELEASE.replace('/.github/', '/Xgithub/'),
  RELEASE.replace('release.yml', 'releaseXyml'),
];

/** Asserts that a certificate-identity regular expression admits the release workflow at a tag, and no impostor. */
function expectReleaseIdentity(pattern: string, where: string): void {
  const re = new RegExp(pattern);
  expect(re.test(RELEASE), `${where}: ${pattern} admits ${RELEASE}`).toBe(true);
  for (const impostor of IMPOSTORS) expect(re.test(impostor), `${where}: ${pattern} refuses ${impostor}`).toBe(false);
}

/** The shell commands of a Markdown page's fenced blocks, continuation lines joined. */
function commands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```(?:sh|bash)?\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  return blocks.flatMap((b) => b.replace(/\\\n\s*/g, ' ').split('\n')).map((l) => l.trim());
}

/** A command's words, quotes removed. */
const words = (command: string): string[] => [...command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
const flag = (argv: string[], name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);

describe('the release workflow', () => {
  it('runs on v* tags, in the repository the image labels name, and signs what it pushes', () => {
    expect(existsSync(join(root, WORKFLOW_PATH))).toBe(true);
    expect(workflow.on.push.tags).toEqual(['v*']);
    expect(IMAGE).toBe(`ghcr.io/${REPOSITORY}`);
    const runs = Object.values(workflow.jobs)
      .flatMap((j) => j.steps)
      .map((s) => s.run ?? '')
      .join('\n');
    expect(runs).toContain('cosign sign --yes --recursive "$IMAGE@$DIGEST"');
    expect(runs).toContain('cosign sign --yes "${CHARTS#oci://}/ticket-auth-proxy@$DIGEST"');
  });
});

describe('docs/releases.md', () => {
  const page = readDoc('docs/releases.md');
  const cosignLines = commands(page)
    .filter((c) => /^cosign verify(-attestation)? /.test(c))
    .map(words);
  const verifications = cosignLines.filter((argv) => argv.includes('--certificate-identity-regexp'));

  it('verifies the image, its SBOM, its provenance and the chart', () => {
    const shown = verifications.map((argv) => `${argv[1]} ${flag(argv, '--type') ?? ''} ${argv.at(-1)!.split('@')[0]}`.replace(/ +/g, ' '));
    expect(shown.sort()).toEqual(
      [`verify ${IMAGE}`, `verify-attestation cyclonedx ${IMAGE}`, `verify-attestation slsaprovenance1 ${IMAGE}`, `verify ${CHART}`].sort(),
    );
  });

  it("names the release workflow's identity and GitHub's issuer in every cosign line, by digest", () => {
    expect(verifications.length).toBeGreaterThan(0);
    for (const argv of verifications) {
      const line = argv.join(' ');
      expectReleaseIdentity(flag(argv, '--certificate-identity-regexp')!, line);
      expect(flag(argv, '--certificate-oidc-issuer'), line).toBe(ISSUER);
      expect(argv.at(-1), line).toMatch(/^[^@\s]+@sha256:[A-Z_]+$/);
    }
  });

  it('names the exact identity of one release and the commit of its tag as the stricter choice', () => {
    const exact = cosignLines.filter((argv) => !argv.includes('--certificate-identity-regexp'));
    expect(exact).toHaveLength(1);
    const argv = exact[0]!;
    expect(flag(argv, '--certificate-identity')).toBe(identity(REPOSITORY, WORKFLOW_PATH, 'refs/tags/v0.1.0'));
    expect(flag(argv, '--certificate-github-workflow-sha')).toBe('COMMIT');
    expect(flag(argv, '--certificate-oidc-issuer')).toBe(ISSUER);
    expect(argv.at(-1)).toBe(`${IMAGE}@sha256:DIGEST`);
    // Where COMMIT comes from, and that it is on main.
    const gh = commands(page).filter((c) => c.startsWith('gh api '));
    expect(gh.map((c) => c.replace(/\s+#.*$/, ''))).toEqual([
      `gh api repos/${REPOSITORY}/compare/main...v0.1.0 --jq .status`,
      `gh api repos/${REPOSITORY}/commits/v0.1.0 --jq .sha`,
    ]);
  });

  it('uses one regular expression for the identity wherever it admits every release, the policy included', () => {
    const policy = read(POLICY_FILE);
    const inPolicy = [...policy.matchAll(/subjectRegExp: '([^']+)'/g)].map((m) => m[1]!);
    expect(new Set([...verifications.map((argv) => flag(argv, '--certificate-identity-regexp')!), ...inPolicy]).size).toBe(1);
  });

  it('verifies with gh the workflow and repository that sign', () => {
    const gh = commands(page).find((c) => c.startsWith('gh attestation verify'));
    const argv = words(gh!);
    expect(argv[3]).toMatch(new RegExp(`^oci://${IMAGE}@sha256:`));
    expect(flag(argv, '--repo')).toBe(REPOSITORY);
    expect(flag(argv, '--signer-workflow')).toBe(`${REPOSITORY}/${WORKFLOW_PATH}`);
    // The runner environment, which only gh can require.
    expect(argv).toContain('--deny-self-hosted-runners');
  });

  it('names the Kyverno policy by its file and its name', () => {
    const policy = parseYaml(read(POLICY_FILE)) as { metadata: { name: string } };
    expect(page).toContain(POLICY_FILE);
    expect(page).toContain(`named \`${policy.metadata.name}\``);
  });
});

describe('docs/releases.md, "Protecting releases"', () => {
  const page = readDoc('docs/releases.md');
  // Read in each test, so that a missing section fails each of them.
  const text = (): string => section(page, 'Protecting releases');
  const flat = (): string => text().replace(/\s+/g, ' ');
  const signing = Object.entries(workflow.jobs).filter(([, job]) => job.permissions?.['id-token'] === 'write');
  const environments = [...new Set(signing.map(([, job]) => job.environment))];

  it('names the environment every signing job runs in, those jobs, and its protection rules', () => {
    expect(environments).toHaveLength(1);
    const environment = environments[0]!;
    expect(environment).toMatch(/^[\w-]+$/);
    expect(flat()).toContain(`**The environment \`${environment}\`**`);
    for (const [name] of signing) expect(flat()).toContain(`\`${name}\``);
    for (const rule of ['Required reviewers', 'Prevent self-review', 'Deployment branches and tags'])
      expect(flat()).toContain(`**${rule}**`);
    // The page's first section says where the release is held too.
    expect(section(page, 'What a release contains').replace(/\s+/g, ' ')).toContain(`the GitHub environment \`${environment}\``);
  });

  it('protects the tags the workflow runs on with a tag ruleset, and says who can push them', () => {
    const [pattern] = workflow.on.push.tags;
    expect(flat()).toContain(`**A tag ruleset for \`${pattern}\`**`);
    for (const rule of ['Restrict creations', 'Restrict updates', 'Restrict deletions']) expect(flat()).toContain(`**${rule}**`);
    expect(flat()).toContain(`Only they can push a \`${pattern}\` tag`);
    expect(flat()).toContain('Write access to the repository is not enough to release.');
  });

  it('says what the certificate carries and which of it each documented line pins, the environment by none', () => {
    const rows = new Map(rowsOf(text(), 'in the certificate').map((r) => [r[0]!, r.slice(1)]));
    const subject = rows.get('the subject: the workflow file, repository and ref that signed')!;
    expect(subject[0]).toBe(`\`${identity(REPOSITORY, WORKFLOW_PATH, 'refs/tags/vX.Y.Z')}\``);
    for (const how of ['--certificate-identity-regexp', 'subjectRegExp', '--signer-workflow']) expect(subject[1]).toContain(`\`${how}\``);
    expect(rows.get('the issuer')![0]).toBe(`\`${ISSUER}\``);
    expect(rows.get('the commit built')![1]).toContain('`--certificate-github-workflow-sha`');
    expect(rows.get('the runner')).toEqual(['`github-hosted`', '`gh attestation verify --deny-self-hosted-runners`']);
    const environment = [...rows.entries()].find(([what]) => what.startsWith('the deployment environment'))!;
    expect(environment[0]).toContain('1.3.6.1.4.1.57264.1.23');
    expect(environment[1][0]).toBe(`\`${environments[0]}\``);
    expect(environment[1][1]).toMatch(/^nothing: /);
    // The trigger of a weekly rebuild differs from a release's: neither can be required.
    expect(rows.get('the trigger')![1]).toMatch(/^nothing: /);
    expect(Object.keys(workflow.on).sort()).toEqual(['push', 'schedule', 'workflow_dispatch']);
  });
});

describe(POLICY_FILE, () => {
  interface Keyless {
    subjectRegExp: string;
    issuer: string;
    rekor: { url: string };
  }
  interface Attestors {
    entries: { keyless: Keyless }[];
  }
  interface VerifyImages {
    type: string;
    imageReferences: string[];
    failureAction: string;
    required: boolean;
    verifyDigest: boolean;
    attestors: Attestors[];
    attestations: { type: string; attestors: Attestors[]; conditions: { all: { key: string; operator: string; value: string }[] }[] }[];
  }
  const policy = parseYaml(read(POLICY_FILE)) as {
    apiVersion: string;
    kind: string;
    metadata: { name: string };
    spec: { rules: { match: unknown; verifyImages: VerifyImages[] }[] };
  };
  const rules = policy.spec.rules.flatMap((r) => r.verifyImages);

  it('is a Kyverno ClusterPolicy that enforces', () => {
    expect([policy.apiVersion, policy.kind, policy.metadata.name]).toEqual(['kyverno.io/v1', 'ClusterPolicy', 'verify-ticket-auth-proxy']);
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({ type: 'SigstoreBundle', failureAction: 'Enforce', required: true, verifyDigest: true });
  });

  it('applies to the image the workflow pushes, by tag or digest, and to no other', () => {
    const globs = rules[0]!.imageReferences.map((g) => new RegExp(`^${g.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`));
    const matches = (ref: string): boolean => globs.some((g) => g.test(ref));
    expect(matches(`${IMAGE}:${VERSION}`)).toBe(true);
    expect(matches(`${IMAGE}@sha256:${'0'.repeat(64)}`)).toBe(true);
    expect(matches(`ghcr.io/someone-else/ticket-auth-proxy:${VERSION}`)).toBe(false);
  });

  it("takes the signature and every attestation from the release workflow's identity only", () => {
    const keyless = [rules[0]!.attestors, ...rules[0]!.attestations.map((a) => a.attestors)]
      .flat()
      .flatMap((a) => a.entries.map((e) => e.keyless));
    expect(keyless).toHaveLength(3);
    for (const k of keyless) {
      expectReleaseIdentity(k.subjectRegExp, POLICY_FILE);
      expect(k.issuer).toBe(ISSUER);
      expect(k.rekor.url).toBe('https://rekor.sigstore.dev');
    }
  });

  it('asks for the SBOM and the provenance the workflow attests, the provenance naming this repository and workflow', () => {
    const steps = Object.values(workflow.jobs.image!.steps);
    expect(steps.some((s) => s.uses?.startsWith('actions/attest@') && s.with?.['sbom-path'] === 'sbom.cdx.json')).toBe(true);
    expect(steps.some((s) => s.uses?.startsWith('actions/attest-build-provenance@'))).toBe(true);
    const byType = new Map(rules[0]!.attestations.map((a) => [a.type, a.conditions.flatMap((c) => c.all)]));
    expect([...byType.keys()].sort()).toEqual(['https://cyclonedx.org/bom', 'https://slsa.dev/provenance/v1']);
    const provenance = Object.fromEntries(byType.get('https://slsa.dev/provenance/v1')!.map((c) => [c.key, c.value]));
    expect(provenance).toEqual({
      '{{ buildDefinition.buildType }}': 'https://actions.github.io/buildtypes/workflow/v1',
      '{{ buildDefinition.externalParameters.workflow.repository }}': `https://github.com/${REPOSITORY}`,
      '{{ buildDefinition.externalParameters.workflow.path }}': WORKFLOW_PATH,
    });
  });
});
