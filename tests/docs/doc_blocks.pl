#!/usr/bin/env perl
# doc_blocks.pl OUTDIR FILE.md...: the code blocks of the docs, for tests/docs/doc_commands.sh.
#
# Every fenced block must name its language. ```bash, ```sh and ```shell blocks are commands,
# run by the test; any other language (text, cpp, cmake, json, python, ...) is shown, not run.
# A block to run may carry marks, one HTML comment per line directly above its fence
# (tests/README.md, "Commands in the docs"):
#   <!-- doc-test: skip reason="..." -->   not run, for the reason given (a reason is required)
#   <!-- doc-test: gpu -->                 needs a GPU: skipped, saying so, where there is none
#   <!-- doc-test: mpirun -->              needs mpirun (scripts/mpirun.sh or mpirun itself)
#   <!-- doc-test: args ARGS -->           ARGS appended to every command that runs a program
#                                          of build/apps (directly or through mpirun)
#   <!-- doc-test: sub OLD=NEW -->         OLD replaced by NEW in the block's text, literally
#   <!-- doc-test: setup COMMAND -->       COMMAND runs first (in the same scratch folder)
#   <!-- doc-test: timeout SECONDS -->     the block's limit (default: doc_commands.sh's)
#   <!-- doc-test: exit nonzero|N -->      the block's last command must end so; the others, 0
#
# For each shell block it writes OUTDIR/NNN.sh (the script to run, marks applied) and
# OUTDIR/NNN.meta (key=value lines: file, line, skip, gpu, mpirun, timeout, exit); every
# mistake in the docs' markup goes to OUTDIR/lint.txt as "FILE:LINE: message".
use strict;
use warnings;

my ($outdir, @files) = @ARGV;
die "usage: doc_blocks.pl OUTDIR FILE.md...\n" unless defined $outdir && @files;
my %runs = map { $_ => 1 } qw(bash sh shell);
my $count = 0;
my @lint;

# A command that runs a program of build/apps: where its arguments end (before a trailing
# comment, a pipe, a redirection or the next command on the line).
sub append_args {
  my ($text, $args) = @_;
  my @lines = split /\n/, $text, -1;
  my @out;
  my $logical = '';
  my @physical;
  my $flush = sub {
    return unless @physical;
    if ($logical =~ m{(^|[\s/])(\./)?build/apps/\w+}) {
      my $last = pop @physical;
      my $end = length $last;
      # the first of: " # comment", " | ", " > ", " ; ", " && " after the program's name
      if ($last =~ /\s(#|\||>|;|&&|2>)/) { $end = $-[0]; }
      $last = substr($last, 0, $end) =~ s/\s+$//r . " $args" . substr($last, $end);
      push @physical, $last;
    }
    push @out, @physical;
    @physical = ();
    $logical = '';
  };
  for my $line (@lines) {
    if (!@physical && ($line =~ /^\s*#/ || $line =~ /^\s*$/)) { push @out, $line; next; }
    push @physical, $line;
    $logical .= $line . ' ';
    $flush->() unless $line =~ /\\$/;
  }
  $flush->();
  return join "\n", @out;
}

# The block's logical commands: lines joined where they end in a backslash, comments left out.
sub last_command_start {
  my @lines = @_;
  my $start = -1;
  my $continued = 0;
  for my $i (0 .. $#lines) {
    my $line = $lines[$i];
    if (!$continued && $line !~ /^\s*(#.*)?$/) { $start = $i; }
    $continued = $line =~ /\\$/ ? 1 : 0;
  }
  return $start;
}

for my $file (@files) {
  open my $fh, '<', $file or die "doc_blocks.pl: cannot read $file: $!\n";
  my @lines = <$fh>;
  close $fh;
  chomp @lines;
  my ($in_fence, $fence, $lang, $start, @body, @marks, $mark_line);
  my ($blank_before, $in_list) = (1, 0);
  for my $n (0 .. $#lines) {
    my $line = $lines[$n];
    my $ln = $n + 1;
    if ($in_fence) {
      if ($line =~ /^\s*\Q$fence\E\s*$/) {
        $in_fence = 0;
        if ($runs{$lang}) {
          my %meta = (file => $file, line => $start, skip => '', gpu => 0, mpirun => 0,
                      timeout => '', exit => 0);
          my (@subs, @args, @setup);
          for my $m (@marks) {
            my ($name, $rest, $at) = @$m;
            if ($name eq 'skip') {
              if ($rest =~ /^reason="([^"]+)"$/) { $meta{skip} = $1; }
              else { push @lint, "$file:$at: doc-test: skip needs reason=\"...\""; }
            } elsif ($name eq 'gpu' || $name eq 'mpirun') {
              $meta{$name} = 1;
            } elsif ($name eq 'args') {
              push @args, $rest;
            } elsif ($name eq 'sub') {
              if ($rest =~ /^([^=]+)=(.*)$/) { push @subs, [$1, $2]; }
              else { push @lint, "$file:$at: doc-test: sub needs OLD=NEW"; }
            } elsif ($name eq 'setup') {
              push @setup, $rest;
            } elsif ($name eq 'timeout') {
              if ($rest =~ /^\d+$/) { $meta{timeout} = $rest; }
              else { push @lint, "$file:$at: doc-test: timeout needs whole seconds"; }
            } elsif ($name eq 'exit') {
              if ($rest =~ /^(nonzero|\d+)$/) { $meta{exit} = $rest; }
              else { push @lint, "$file:$at: doc-test: exit needs nonzero or a number"; }
            } else {
              push @lint, "$file:$at: unknown mark doc-test: $name";
            }
          }
          my $text = join "\n", @body;
          for my $s (@subs) {
            my ($old, $new) = @$s;
            push @lint, "$file:$start: doc-test: sub $old=...: '$old' is not in the block"
                unless index($text, $old) >= 0;
            $text =~ s/\Q$old\E/$new/g;
          }
          $text = append_args($text, join ' ', @args) if @args;
          # What a block needs must be marked, so that it skips (or runs) for the right reason.
          if (!$meta{skip}) {
            push @lint, "$file:$start: this block runs mpirun: mark it <!-- doc-test: mpirun -->"
                if $text =~ /(^|[\s\/])mpirun(\.sh)?\s/m && !$meta{mpirun};
            push @lint, "$file:$start: this block needs a GPU: mark it <!-- doc-test: gpu -->"
                if $text =~ /--device(=|\s+)cuda|\bcuda:\d/ && !$meta{gpu};
          }
          my @script = ('set -eo pipefail', @setup);
          my @cmds = split /\n/, $text, -1;
          if ($meta{exit} ne '0') {
            my $s = last_command_start(@cmds);
            push @script, @cmds[0 .. $s - 1] if $s > 0;
            push @script, 'set +e', @cmds[$s .. $#cmds];
          } else {
            push @script, @cmds;
          }
          my $id = sprintf '%03d', ++$count;
          open my $sh, '>', "$outdir/$id.sh" or die "doc_blocks.pl: $outdir/$id.sh: $!\n";
          print $sh join("\n", @script), "\n";
          close $sh;
          open my $mf, '>', "$outdir/$id.meta" or die "doc_blocks.pl: $outdir/$id.meta: $!\n";
          print $mf "$_=$meta{$_}\n" for sort keys %meta;
          close $mf;
        } elsif (@marks) {
          push @lint, "$file:$mark_line: doc-test marks stand above a ```$lang block, which never runs";
        }
        @marks = ();
        $blank_before = 0;
      } else {
        push @body, $line;
      }
      next;
    }
    if ($line =~ /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$/) {
      ($in_fence, $fence, $lang, $start, @body) = (1, $2, lc $3, $ln);
      push @lint, "$file:$ln: a code block without a language: ```bash for commands to run, "
          . "```text for output (or cpp, cmake, ...)" if $lang eq '';
      next;
    }
    if ($line =~ /^\s*<!--\s*doc-test:\s*(\S+)\s*(.*?)\s*-->\s*$/) {
      push @marks, [$1, $2, $ln];
      $mark_line //= $ln;
      next;
    }
    if ($line =~ /^\s*<!--\s*doc-test/) {
      push @lint, "$file:$ln: a doc-test mark must be one line: <!-- doc-test: NAME ARGS -->";
    }
    if (@marks) {
      push @lint, "$file:$mark_line: doc-test marks must stand directly above a code block";
      @marks = ();
    }
    undef $mark_line;
    # An indented code block: 4 spaces after a blank line, outside a list.
    if ($line =~ /^\s*([-*+]|\d+[.)])\s/) { $in_list = 1; }
    elsif ($blank_before && $line =~ /^\S/) { $in_list = 0; }
    if ($blank_before && !$in_list && $line =~ /^ {4,}\S/) {
      push @lint, "$file:$ln: an indented code block: fence it (```bash for commands to run, "
          . "```text otherwise)";
    }
    $blank_before = $line =~ /^\s*$/ ? 1 : 0;
  }
  push @lint, "$file:$start: a code block that never ends" if $in_fence;
}

open my $lf, '>', "$outdir/lint.txt" or die "doc_blocks.pl: $outdir/lint.txt: $!\n";
print $lf "$_\n" for @lint;
close $lf;
