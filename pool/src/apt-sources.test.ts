import { describe, expect, it } from "vitest";
import { parseAptSources, pickAptMirrors } from "./apt-sources.ts";

describe("parseAptSources", () => {
  it("reads the enabled deb lines of a one-line sources file", () => {
    const text = [
      "# the archive",
      "deb http://deb.debian.org/debian/ bookworm main",
      "deb [arch=amd64 signed-by=/k.gpg] https://mirror.example/debian bookworm-updates main # updates",
      "deb-src http://deb.debian.org/debian bookworm main",
      "#deb http://old.example/debian bookworm main",
      "deb http://broken",
    ].join("\n");
    expect(parseAptSources(text, "list")).toEqual([
      { uri: "http://deb.debian.org/debian", suite: "bookworm" },
      { uri: "https://mirror.example/debian", suite: "bookworm-updates" },
    ]);
  });

  it("reads every suite of the enabled deb stanzas of a deb822 file", () => {
    const text = [
      "Types: deb deb-src",
      "# http://snapshot.debian.org/archive/debian/20250520T000000Z",
      "URIs: http://deb.debian.org/debian/ http://second.example/debian",
      "Suites: bookworm bookworm-updates",
      "Components: main",
      "",
      "Types: deb",
      "URIs: http://deb.debian.org/debian-security",
      "Suites: bookworm-security",
      "Enabled: no",
      "",
      "Types: deb-src",
      "URIs: http://src.example/debian",
      "Suites: bookworm",
    ].join("\n");
    expect(parseAptSources(text, "deb822")).toEqual([
      { uri: "http://deb.debian.org/debian", suite: "bookworm" },
      { uri: "http://deb.debian.org/debian", suite: "bookworm-updates" },
    ]);
  });
});

describe("pickAptMirrors", () => {
  const sources = [
    { uri: "https://packages.example/apt", suite: "cloud-sdk-bookworm" },
    { uri: "http://mirror.example/debian", suite: "bookworm" },
    { uri: "http://mirror.example/debian-security", suite: "bookworm-security" },
  ];

  it("takes the suite's own sources", () => {
    expect(pickAptMirrors(sources, "bookworm", {})).toEqual({
      mirror: "http://mirror.example/debian",
      security: "http://mirror.example/debian-security",
    });
  });

  it("takes another release's Debian mirror, and deb.debian.org's security mirror beside deb.debian.org", () => {
    expect(pickAptMirrors([{ uri: "http://ftp.example/debian", suite: "trixie" }], "bookworm", {})).toEqual({
      mirror: "http://ftp.example/debian",
      security: "",
    });
    expect(pickAptMirrors([], "bookworm", {})).toEqual({
      mirror: "http://deb.debian.org/debian",
      security: "http://deb.debian.org/debian-security",
    });
  });

  it("lets PAI_DEBIAN_MIRROR and PAI_DEBIAN_SECURITY decide, an empty security meaning none", () => {
    expect(
      pickAptMirrors(sources, "bookworm", {
        PAI_DEBIAN_MIRROR: "http://own/debian",
        PAI_DEBIAN_SECURITY: "",
      }),
    ).toEqual({ mirror: "http://own/debian", security: "" });
  });
});
