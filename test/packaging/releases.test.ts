/**
 * The verification that docs/releases.md shows (its cosign lines) and the Kyverno policy of
 * examples/kyverno name the identity that signs a release: the release workflow's file, in the
 * repository the image's labels name, at a tag, with GitHub's OIDC issuer; and the registry and
 * image the workflow pushes to. Neither cosign nor Kyverno runs here: what they would be told is
 * checked against what the workflow does.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { readDoc } from '../helpers/docs.js';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

const WORKFLOW_PATH = '.github/workflows/release.yml';
const ISSUER = 'https://token.actions.githubusercontent.com';
const POLICY_FILE = 'examples/kyverno/verify-ticket-auth-proxy.yaml';

interface ReleaseWorkflow {
  on: { push: { tags: string[] } };
  env: { IMAGE: string; CHARTS: string };
  jobs: Record<string, { steps: { uses?: string; run?: string; with?: Record<string, unknown> }[] }>;
}
const workflow = parseYaml(read(WORKFLOW_PATH)) as ReleaseWorkflow;
const IMAGE = workflow.env.IMAGE;
const CHART = `${workflow.env.CHARTS.replace(/^oci:\/\//, '')}/ticket-auth-proxy`;
const VERSION = (JSON.parse(read('package.json')) as { version: string }).version;

/** owner/name of the repository the image's source label names. */
const REPOSITORY = /org\.opencontainers\.image\.source="https:\/\/github\.com\/([^"/]+\/[^"/]+)"/.exec(read('Dockerfile'))![1]!;

/** The certificate identity of the release workflow at the tag of a version (its job_workflow_ref as a URL). */
const identity = (repository: string, workflowPath: string, ref: string): string =>
  `https://github.com/${repository}/${workflowPath}@${ref}`;
const RELEASE = identity(REPOSITORY, WORKFLOW_PATH, `refs/tags/v${VERSION}`);
// Identities that must not pass for a release's.
const IMPOSTORS = [
  identity(REPOSITORY, WORKFLOW_PATH, 'refs/heads/main'),
  identity(REPOSITORY, '.github/workflows/ci.yml', `refs/tags/v${VERSION}`),
  identity(`someone-else/${REPOSITORY.split('/')[1]}`, WORKFLOW_PATH, `refs/tags/v${VERSION}`),
  `https://github.com/evil/x/.github/workflows/release.yml@refs/heads/${REPOSITORY}/${WORKFLOW_PATH}@refs/tags/v${VERSION}`,
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
  const verifications = commands(page)
    .filter((c) => /^cosign verify(-attestation)? /.test(c))
    .map(words);

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

  it('names the exact identity of one release as the stricter choice', () => {
    expect(page).toContain(`--certificate-identity ${RELEASE.replace(`v${VERSION}`, 'v0.1.0')}`);
  });

  it('verifies with gh the workflow and repository that sign', () => {
    const gh = commands(page).find((c) => c.startsWith('gh attestation verify'));
    const argv = words(gh!);
    expect(argv[3]).toMatch(new RegExp(`^oci://${IMAGE}@sha256:`));
    expect(flag(argv, '--repo')).toBe(REPOSITORY);
    expect(flag(argv, '--signer-workflow')).toBe(`${REPOSITORY}/${WORKFLOW_PATH}`);
  });

  it('names the Kyverno policy by its file and its name', () => {
    const policy = parseYaml(read(POLICY_FILE)) as { metadata: { name: string } };
    expect(page).toContain(POLICY_FILE);
    expect(page).toContain(`named \`${policy.metadata.name}\``);
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
