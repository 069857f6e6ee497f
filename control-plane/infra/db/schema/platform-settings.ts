/** Platform settings (maintenance mode, the kill switch's version). */

export interface PlatformSettingsTable {
  key: string;
  value: unknown;
}
