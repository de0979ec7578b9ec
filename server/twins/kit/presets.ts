/**
 * Scenario presets as twin folders ship them (server/twins/vendors/<name>/presets.ts): named seed documents with the
 * counts they promise. The type lives here, beside the twins, so that a twin's folder holds its presets
 * without importing from server/scenarios/, which collects and lists them (server/scenarios/presets.ts).
 * Seed shapes: docs/twins.md, "Seeds".
 */

export interface ScenarioPreset {
  id: string;
  name: string;
  description: string;
  /** Catalog twin names the preset starts. */
  twins: string[];
  /** Seed document per twin name. */
  seed: Record<string, unknown>;
  /**
   * What the twins hold right after start (and after every reset), per twin. Counts are of objects the
   * seed creates, as the vendor API lists them; each twin's `promiseKeys` (TwinPresets) says which keys
   * it counts and what each one means.
   */
  promises: Record<string, Record<string, number>>;
}

/** What one twin's folder ships: its presets and the vocabulary of their promised counts. */
export interface TwinPresets {
  /** The presets that seed this twin alone (presets that span several twins live in server/scenarios/). */
  presets: readonly ScenarioPreset[];
  /**
   * Every `promises` key a preset may give for this twin, with what it counts; test/scenarios/sdk-counts.ts
   * counts each one through the vendor's official SDK.
   */
  promiseKeys: Readonly<Record<string, string>>;
}
