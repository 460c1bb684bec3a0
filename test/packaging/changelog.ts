/**
 * CHANGELOG.md as Keep a Changelog 1.1.0 writes it, its top section named by the version the tree
 * carries (docs/releases.md, "How versions move"): between releases `## [X.Y.Z-dev] - Unreleased`
 * on top, where changes are recorded as they land; then one `## [X.Y.Z] - YYYY-MM-DD` section a
 * release, newest first. In a release's tree the top section is that release's.
 */

export interface ChangelogSection {
  version: string;
  /** YYYY-MM-DD for a release; `Unreleased` for the section of the version between releases. */
  date: string;
  /** The section's text between its heading and the next section's, trimmed. */
  body: string;
}

const RELEASED = /^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})\s*$/;
const UNRELEASED = /^## \[(\d+\.\d+\.\d+-dev)\] - (Unreleased)\s*$/;

/**
 * Every section, newest first; throws on a heading of another form, and on an unreleased section
 * anywhere but on top.
 */
export function allChangelogSections(text: string): ChangelogSection[] {
  const sections: ChangelogSection[] = [];
  let current: { version: string; date: string; lines: string[] } | undefined;
  const close = (): void => {
    if (current !== undefined) sections.push({ version: current.version, date: current.date, body: current.lines.join('\n').trim() });
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('## ')) {
      const m = RELEASED.exec(line) ?? UNRELEASED.exec(line);
      if (m === null) {
        throw new Error(`CHANGELOG.md: "${line}" is not "## [X.Y.Z] - YYYY-MM-DD", or "## [X.Y.Z-dev] - Unreleased" on top`);
      }
      if (m[2] === 'Unreleased' && sections.length + (current === undefined ? 0 : 1) > 0) {
        throw new Error(`CHANGELOG.md: "${line}" is below another section: only the top one is unreleased`);
      }
      close();
      current = { version: m[1]!, date: m[2]!, lines: [] };
    } else if (/^\[[^\]]+\]: /.test(line)) {
      // The link references at the end belong to no section.
      close();
      current = undefined;
    } else current?.lines.push(line);
  }
  close();
  return sections;
}

/** The released sections, newest first (the unreleased one on top left out). */
export function changelogSections(text: string): ChangelogSection[] {
  return allChangelogSections(text).filter((s) => s.date !== 'Unreleased');
}

/** The top section: the version the tree carries. */
export function newestChangelogSection(text: string): ChangelogSection | undefined {
  return allChangelogSections(text)[0];
}

/** The link references at the end (`[0.1.0]: https://…`), by label. */
export function changelogLinks(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^\[([^\]]+)\]: (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}
