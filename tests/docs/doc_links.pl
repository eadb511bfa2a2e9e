#!/usr/bin/env perl
# doc_links.pl SOURCE_DIR: every reference from a doc (any .md of the tree) or a source comment
# to a doc must resolve, so that a page or a section that moves cannot leave a dangling pointer:
#   - markdown links [text](path) and [text](path#anchor): the file exists, relative to the doc,
#     and the anchor is one of its headings (GitHub's slugs);
#   - a doc named with a section, as the tree writes it in prose and comments —
#     `parallel/README.md`, "Faults" or (docs/faults.md, "Inject a fault") — names a heading of
#     that doc (the quoted text starts a heading, case and backticks aside);
#   - a path in backticks under one of the source folders (`parallel/ddp.h`, `docs/nccl.md`),
#     in a doc: the file exists (relative to the root or to the doc's folder).
# Prints each broken reference as FILE:LINE: message and exits 1 if there is any.
use strict;
use warnings;
use utf8;
use open qw(:std :encoding(UTF-8));
use File::Find;
use File::Basename qw(dirname);
use File::Spec;

my $root = shift or die "usage: doc_links.pl SOURCE_DIR\n";
chdir $root or die "doc_links.pl: cannot enter $root: $!\n";
my (@docs, @sources);
find({ no_chdir => 1, wanted => sub {
  my $p = $File::Find::name =~ s{^\./}{}r;
  # (tests/docs/fixtures: docs wrong on purpose, for the test of this test)
  if (-d $_ && ($p =~ m{(^|/)(build[^/]*|\.git)$} || $p eq 'tests/docs/fixtures')) {
    $File::Find::prune = 1;
    return;
  }
  return unless -f $_;
  push @docs, $p if $p =~ /\.md$/;
  push @sources, $p if $p =~ /\.(h|cpp|cu|cuh|sh|txt|py|cmake)$/ || $p =~ m{^\.ci/};
}}, '.');

my %headings;  # file => { slug => 1 }, plus 'titles' => [lowercase heading texts]
sub headings_of {
  my ($file) = @_;
  return $headings{$file} if $headings{$file};
  my %h = (slugs => {}, titles => []);
  if (open my $fh, '<', $file) {
    my $fence = 0;
    my %seen;
    while (my $line = <$fh>) {
      $fence = !$fence if $line =~ /^\s*(```|~~~)/;
      next if $fence || $line !~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
      my $text = $1;
      (my $plain = $text) =~ s/`//g;
      push @{$h{titles}}, lc $plain;
      # GitHub: lowercase, drop what is not a letter, digit, space, hyphen or underscore,
      # spaces to hyphens; repeats get -1, -2, ...
      my $slug = lc $plain;
      $slug =~ s/[^\p{L}\p{N}\s_-]//g;
      $slug =~ s/ /-/g;
      my $n = $seen{$slug}++;
      $h{slugs}{$n ? "$slug-$n" : $slug} = 1;
    }
  }
  return $headings{$file} = \%h;
}

# Named in the tree but not in it: the design, beside the tree (../shared/DESIGN.md), and the
# header that configuring writes (build/generated/ops/ops.h).
my %elsewhere = map { $_ => 1 } qw(DESIGN.md ../shared/DESIGN.md ops/ops.h);

# A path as prose and comments write it: from the referring file's folder or from the root.
# Markdown links are stricter (link_target): from the folder alone, as GitHub reads them.
sub resolve {
  my ($from, $target, @bases) = @_;
  return $target if $elsewhere{$target};
  @bases = (dirname($from), '.') unless @bases;
  for my $base (@bases) {
    my $p = File::Spec->canonpath("$base/$target");
    1 while $p =~ s{(^|/)(?!\.\.)[^/]+/\.\.(/|$)}{$1};
    return $p if -e $p;
  }
  return undef;
}

my @broken;
my $folders = qr{(?:core|ops|nn|optim|parallel|data|train|apps|tests|tools|scripts|docs|cmake)/};
sub check_section {
  my ($file, $ln, $doc, $section) = @_;
  my $path = resolve($file, $doc);
  return push @broken, "$file:$ln: $doc does not exist" unless $path;
  return unless $path =~ /\.md$/;
  (my $want = lc $section) =~ s/`//g;
  $want =~ s/[.…]+$//;
  for my $t (@{headings_of($path)->{titles}}) { return if index($t, $want) == 0; }
  push @broken, "$file:$ln: $doc has no section \"$section\"";
}

for my $file (@docs) {
  open my $fh, '<', $file or die "doc_links.pl: $file: $!\n";
  my $fence = 0;
  my $ln = 0;
  while (my $line = <$fh>) {
    $ln++;
    if ($line =~ /^\s*(```|~~~)/) { $fence = !$fence; next; }
    next if $fence;
    while ($line =~ /\[[^\]]*\]\(([^)\s]+)\)/g) {
      my $target = $1;
      next if $target =~ m{^(https?|mailto|ftp):};
      my ($path, $anchor) = split /#/, $target, 2;
      my $resolved = $path eq '' ? $file : resolve($file, $path, dirname($file));
      if (!$resolved) { push @broken, "$file:$ln: link to $path: no such file"; next; }
      if (defined $anchor && $resolved =~ /\.md$/ && !headings_of($resolved)->{slugs}{$anchor}) {
        push @broken, "$file:$ln: link to $target: $resolved has no heading #$anchor";
      }
    }
    while ($line =~ /`((?:\.\.\/)*$folders[\w.\/*-]*\.(?:md|h|cpp|cu|cuh|sh|py|txt|json|cmake))`/g) {
      my $p = $1;
      next if $p =~ /\*/ ? glob($p) : resolve($file, $p);
      push @broken, "$file:$ln: `$p` does not exist";
    }
    while ($line =~ /`?([\w.\/-]*\.md)`?,? \(?"([^"]+)"/g) { check_section($file, $ln, $1, $2); }
  }
  close $fh;
}

# Comments in code that send the reader to a doc: the doc, and the section if one is named.
for my $file (@sources) {
  open my $fh, '<', $file or next;
  my $ln = 0;
  while (my $line = <$fh>) {
    $ln++;
    next unless $line =~ /\.md\b/ && $line =~ m{^\s*(//|#|\*)};
    while ($line =~ /([\w.\/-]*\w\.md)\b,? \(?"([^"]+)"/g) { check_section($file, $ln, $1, $2); }
    while ($line =~ /(?<![\w\/.-])([\w.\/-]*\w\.md)\b/g) {
      my $doc = $1;
      push @broken, "$file:$ln: $doc does not exist" unless resolve($file, $doc);
    }
  }
  close $fh;
}

print "$_\n" for @broken;
printf "doc_links: %d doc(s), %d source file(s), %d broken reference(s)\n", scalar @docs,
    scalar @sources, scalar @broken;
exit(@broken ? 1 : 0);
